"""idle-gpu-autoscaler: frees GPUs held by idle Kueue Workloads."""

__version__ = "0.1.0"
