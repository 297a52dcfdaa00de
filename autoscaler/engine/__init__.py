"""The reconcile loop: read the cluster, query Prometheus fleet-wide, decide, guard, act,
publish an immutable snapshot; and what the leader writes after each cycle.
"""
