"""Where dispatched work runs in this process, and how any worker calls it.

- :mod:`.registry`: where callables come from (``@task``, entry points, import paths), the loader
  contract, and how a result reads as an outcome;
- :mod:`.calls`: calling a task, a loader or a schedule's job, as every executor does (the embedded
  pool here, Celery workers in :mod:`ostinato.integrations.celery`);
- :mod:`.worker_pool`: the embedded executor, a pool of worker threads in the scheduler's process.

It imports only the domain.
"""
