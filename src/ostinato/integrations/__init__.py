"""Faces of Ostinato towards other schedulers: programs written for them talk to Ostinato
unchanged, and their databases are read into its store.

``swh``: swh-scheduler 3.6's RPC protocol (docs/reference/swh-compat.md) and its database import
(docs/reference/swh-import.md).
"""
