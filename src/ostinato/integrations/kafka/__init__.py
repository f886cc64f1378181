"""Kafka: the archive's journal of visit statuses, read into the feedback loop (the ``kafka`` extra for
the client; docs/design/tasks.md).

- :mod:`.journal_messages`: one message's bytes (JSON or the archive's msgpack) → a ``VisitStatus``;
- :mod:`.journal_client`: the ``scheduler-journal-client`` (``ostinato journal-client``), which reads
  the topics and hands batches to the store's ``record_visit_statuses``.
"""
