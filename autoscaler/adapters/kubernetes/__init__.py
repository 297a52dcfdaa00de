"""The Kubernetes API: the one client module that imports `kubernetes`, object codecs, watch
caches, leader election.
"""
