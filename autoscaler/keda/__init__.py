"""KEDA's external scaler (gRPC) and metrics-api endpoint (HTTP), answered from the snapshot.

`externalscaler_pb2*.py*` are generated from `externalscaler.proto`: never edit them by hand.
"""
