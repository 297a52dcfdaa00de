"""queues."""
