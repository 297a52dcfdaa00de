"""Kueue Workloads and their owners: reading them joined with pods, and the writes on them."""
