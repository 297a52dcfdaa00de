"""The REST API: FastAPI app factory, routes, request/response schemas, authentication.

Kept import-free so `autoscaler.config` can mount `autoscaler.api.settings.ApiSettings`
without loading the web stack. Entry points: `autoscaler.api.assembly.build_api` (the
composition root's) and `autoscaler.api.app.create_app`.
"""
