"""listeners."""
