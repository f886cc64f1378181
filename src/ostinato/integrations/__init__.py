"""Ostinato's faces towards other systems: each package is named for the system it talks to.

- ``celery``: running work on Celery workers (dispatch, the workers' tasks, the listener of what they report);
- ``kafka``: the archive's journal of visit statuses (message decoding and the journal client);
- ``swh``: swh-scheduler 3.6, so that programs written for it talk to Ostinato unchanged: its RPC
  protocol (docs/reference/swh-compat.md) and the import of its database (docs/reference/swh-import.md).
"""
