"""The pure core: models, idleness, policy and decisions. No I/O, no clocks, no clients."""
