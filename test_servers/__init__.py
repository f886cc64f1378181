"""Throwaway servers for the tests and the benchmarks, never used in production and not part of the
``ostinato`` distribution (the wheel holds ``src/ostinato`` only).

- :mod:`.postgres`: a PostgreSQL cluster in a temporary directory (and ``free_port``);
- :mod:`.redis` and :mod:`.rabbitmq`: Celery brokers;
- :mod:`.kafka`: a Kafka-protocol broker (Tansu) for the journal client;
- :mod:`.swh_peer`: swh-scheduler 3.6.0 in a virtual environment of its own, and its database.

The tests import it through pytest's ``pythonpath`` setting (pyproject.toml); a benchmark puts the
repository's root on ``sys.path`` first (``bench/*/*.py``). ``python -m test_servers.postgres`` (or
``redis``, ``rabbitmq``, ``kafka``) from the repository's root starts one by hand.
"""
