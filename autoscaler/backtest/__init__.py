"""What would a policy have done? Replays the policy engine over Prometheus history.

`identity` names workloads from metric labels (no cluster access), `timeline` turns range
query chunks into per-GPU slot series, `replay` runs the policy engine over them, `report`
and `chart` present the figures, `command` is the `backtest` command.
"""
