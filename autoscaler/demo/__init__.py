"""The demo's stories: scenarios played by the real service on the simulated cluster, the live
view and the summary.
"""
