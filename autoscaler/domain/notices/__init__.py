"""notices."""
