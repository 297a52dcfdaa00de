"""Prometheus or Thanos Querier: the fleet-wide PromQL reads of dcgm-exporter series."""
