"""The store's history role: the console's samples per series (``interface.py``), its flow written
once for both SQL dialects (``flow.py``) and its named queries per dialect (``sqlite.sql``, ``postgresql.sql``)."""
