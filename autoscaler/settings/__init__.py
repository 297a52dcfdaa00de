"""The whole settings tree (pydantic, camelCase YAML), each field documented with its unit and
reason, and the one module that turns settings into domain rules. `reference/` draws the chart's
schema (`config`), config/example.yaml and docs/CONFIG.md from those fields.
"""
