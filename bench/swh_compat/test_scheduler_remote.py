"""swh-scheduler's TestScheduler, unchanged, through its RemoteScheduler against Ostinato."""

