"""The checks of the `actuators:` section that need another section (ISSUE 17), each problem
naming its key.

A suspend actuator acts on rows whose owner kind is RayCluster (the row is the RayCluster
itself), so with `cluster.ownerKinds.RayCluster` disabled every such row would be protected
and the actuator could never act: a file that says both is a mistake, caught at start-up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from autoscaler.domain.policy.management import MANAGERS

if TYPE_CHECKING:  # the tree imports this module; only its type is needed here
    from autoscaler.settings.tree import Settings


def check_actuators(settings: Settings) -> list[str]:
    """Every problem of `actuators:` against the rest of the file; empty when sound."""
    actuators = settings.actuators
    if not actuators.enabled():
        return [
            "actuators: every actuator is disabled, so the service could never free a GPU: "
            f"enable at least one of {', '.join(MANAGERS)}"
        ]
    ray = settings.cluster.owner_kinds.get("RayCluster")
    if ray is not None and ray.enabled:
        return []
    return [
        f"actuators.{manager}.enabled: its rows are RayClusters (owner kind RayCluster), but "
        "cluster.ownerKinds.RayCluster.enabled is false, so every one would be protected: "
        "enable that owner kind or disable this actuator"
        for manager, row in MANAGERS.items()
        if row.row_is_owner and actuators.switch(manager)
    ]
