"""acting."""
