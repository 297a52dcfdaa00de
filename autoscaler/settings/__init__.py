"""The whole settings tree (pydantic, camelCase YAML), each field documented with its unit and
reason, and the one module that turns settings into domain rules.
"""
