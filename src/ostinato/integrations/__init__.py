"""Faces that let programs written for other schedulers talk to Ostinato unchanged.

``swh``: swh-scheduler 3.6's RPC protocol (see docs/reference/swh-compat.md).
"""
