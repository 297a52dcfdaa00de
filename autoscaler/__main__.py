"""`python -m autoscaler` is the same as the `idle-gpu-autoscaler` console script."""

import sys

from autoscaler.cli import main

sys.exit(main())
