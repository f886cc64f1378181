"""The store's tasks role: its interface (``interface.py``), its flow written once for
both SQL dialects (``flow.py``, with its rows read back in ``rows.py`` and its batches keyed in
``batches.py``) and its named queries per dialect (``sqlite.sql``, ``postgresql.sql``)."""
