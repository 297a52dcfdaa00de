"""The runtime-state ConfigMap: pauses, the audit trail and the guards' memory, shared by every
replica.
"""
