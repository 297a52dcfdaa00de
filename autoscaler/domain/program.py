"""The command line's program name: the one home of it for every command we print (the CLI's
own usage, its error hints, the status view's and the Keep page's "bring it back")."""

from __future__ import annotations

PROGRAM = "idle-gpu-autoscaler"
# Every metric the service exports starts with it (docs/METRICS.md), whichever module owns it.
METRIC_PREFIX = "idle_gpu_autoscaler_"
