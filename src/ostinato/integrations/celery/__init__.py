"""Celery: Ostinato's work on Celery workers (the ``celery`` extra; docs/reference/distributed.md).

- :mod:`.app`: the Celery app, queue names, the ``ostinato`` message header, the outcome
  message workers publish, queue depths read from the broker;
- :mod:`.executor`: dispatch (the executor of the runner, the orchestrator and the deadline
  scheduler when the ``executor`` setting is ``celery``);
- :mod:`.worker`: the tasks a worker registers (``ostinato worker``) and what they report;
- :mod:`.listener`: the ``scheduler-listener`` (``ostinato listener``), which records what workers report.

``celery -A ostinato.celery worker`` starts a worker with Celery's own command line: that entry
point is the module :mod:`ostinato.celery`, which builds its app from the settings on import.
Nothing here is imported until Celery is used.
"""
