"""The loops of Ostinato, thin over the domain rules and the store.

- :mod:`.runner`: grabs ready tasks and hands them to an executor;
- :mod:`.orchestrator` and :mod:`.revisit_steering`: grabs origins to visit by policy, and steers
  the revisit threshold;
- :mod:`.deadline_scheduler`: schedules (deadline-greedy), their runs and leases;
- :mod:`.archiver`: finished tasks and their runs exported as JSON lines, then deleted;
- :mod:`.service_metrics`: the Prometheus metrics these loops measure;
- :mod:`.embedded_scheduler`: one process running the loops above over one store (``ostinato run``,
  ``runner``, ``orchestrator``, ``listener``), with the embedded worker pool or, by setting, Celery
  and the Kafka journal client from :mod:`ostinato.integrations`, imported only then.
"""
