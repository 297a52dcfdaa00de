"""One module per group of endpoints; `autoscaler.api.app` mounts them."""
