"""swh-scheduler, the Software Heritage archive's scheduler: what Ostinato reads of it or speaks with it."""
