"""swh-scheduler's TestScheduler, unchanged, through its RemoteScheduler against Ostinato."""

from swh.scheduler.tests.test_scheduler import TestScheduler  # noqa: F401 - pytest collects the class from this module

