"""`python -m autoscaler.client status ...`: the client subcommands without the service."""

import sys

from autoscaler.client.commands import main

sys.exit(main())
