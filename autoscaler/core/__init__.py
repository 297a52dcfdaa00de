"""Below everything but the domain: the ports (every Protocol the service depends on), our
exception tree, the clock and logging set-up.
"""
