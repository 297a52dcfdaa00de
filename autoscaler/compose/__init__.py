"""The composition root: the only place that builds adapters and servers (serve, demo,
backtest, the API).
"""
