"""The store's origins role: its interface (``interface.py``), its flow written once for
both SQL dialects (``flow.py``, its rows read and written by ``rows.py``) and its named queries
per dialect, one file per subject: listings (``sqlite_listings.sql``, ``postgresql_listings.sql``),
scheduling (``*_scheduling.sql``: the policies' picks, the grab, politeness) and metrics
(``*_metrics.sql``)."""
