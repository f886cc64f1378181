"""swh-scheduler's journal client tests, unchanged: its process_journal_objects writes through
its RemoteScheduler to Ostinato."""

from swh.scheduler.tests.test_journal_client import *  # noqa: F403 - swh's tests, collected here unchanged
