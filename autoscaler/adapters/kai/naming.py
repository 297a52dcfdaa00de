"""What only the KAI adapter reads of KAI Scheduler's objects. How KAI's queues are named in
`domain/queues/facts.py` terms (`KAI_FLAVOR`, `KAI_GPU`, `KAI_COHORT`, `kai_cluster_queue`) lives in
`domain/policy/management.py`, shared with the rows of KAI-managed RayClusters and the
simulation."""

from __future__ import annotations

POD_GROUP_ANNOTATION = "pod-group-name"  # KAI's PodGrouper names each pod's PodGroup here
