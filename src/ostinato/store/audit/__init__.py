"""The store's audit role: its interface (``interface.py``), its flow written once for
both SQL dialects (``flow.py``) and its named queries per dialect (``sqlite.sql``, ``postgresql.sql``)."""
