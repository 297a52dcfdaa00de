"""The `actuators:` section (ISSUE 17): which ways of freeing GPUs the service may use.

One switch per manager, `actuators.<manager>.enabled`, made from its row of the managers'
table (`domain/policy/management.py`: default and descriptions), so a new manager's switch
needs no edit here. Kueue's (deactivate the Workload) is on by default; the two that suspend
a RayCluster directly are opt-in, since they act on objects no queueing system admits. Which
one applies to a RayCluster is decided by `domain/policy/claims.py`: a RayCluster a Kueue
Workload admits is never suspended, whatever is enabled here. docs/ACTUATORS.md has the whole
story.

`check_actuators` makes the checks that need another section. A suspend actuator acts on rows
whose owner kind is RayCluster (the row is the RayCluster itself), so with
`cluster.ownerKinds.RayCluster` disabled every such row would be protected and the actuator
could never act: a file that says both is a mistake, caught at start-up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field, create_model

from autoscaler.domain.policy.management import MANAGERS, Management, Manager
from autoscaler.settings.base import Section

if TYPE_CHECKING:  # the tree imports this module; only its type is needed here
    from autoscaler.settings.tree import Settings


class ActuatorSwitches(Section):
    """What the section's fields (one per manager, made below) have in common."""

    def enabled(self) -> frozenset[Manager]:
        """The managers whose workloads the service may write on."""
        return frozenset(manager for manager in MANAGERS if self.switch(manager))

    def switch(self, manager: Manager) -> bool:
        """`actuators.<manager>.enabled`."""
        enabled: bool = getattr(self, manager.value).enabled
        return enabled


def _switch(manager: Manager, row: Management) -> type[Section]:
    """The `actuators.<manager>` section: its `enabled`, as the row says."""
    name = f"{manager.value.capitalize()}ActuatorSettings"
    enabled: Any = (bool, Field(row.enabled_by_default, description=row.switch_words))
    return create_model(name, __base__=Section, __module__=__name__, enabled=enabled)


def _actuator_settings() -> type[ActuatorSwitches]:
    fields: dict[str, Any] = {}
    for manager, row in MANAGERS.items():
        section = _switch(manager, row)
        fields[manager.value] = (
            section,
            Field(default_factory=section, description=row.section_words),
        )
    return create_model(
        "ActuatorSettings", __base__=ActuatorSwitches, __module__=__name__, **fields
    )


if TYPE_CHECKING:  # the checker sees the common base; the fields are made at import
    ActuatorSettings = ActuatorSwitches
else:
    ActuatorSettings = _actuator_settings()


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
