"""Notification targets (ISSUE 15): a signed JSON webhook and Slack-compatible incoming
webhooks, each one POST over the standard library with every failure mapped in `http.py`."""
