"""NVIDIA KAI Scheduler: its queues and the PodGroups that wait in them (the `PendingWork`
port), named as the rows of KAI-managed RayClusters are (`naming.py`)."""
