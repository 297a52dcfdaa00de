"""guards."""
