"""The store's origins role: its interface (``interface.py``), its flow written once for
both SQL dialects (``flow.py``, its rows read and written by ``rows.py``) and its named queries
per dialect (``sqlite.sql``, ``postgresql.sql``)."""
