"""The REST API: FastAPI app factory, routes, request/response schemas, authentication.

Kept import-free so `autoscaler.settings.tree` can mount `autoscaler.settings.api.ApiSettings`
without loading the web stack. Entry points: `autoscaler.compose.api.build_api` (the
composition root's) and `autoscaler.api.app.create_app`.
"""
