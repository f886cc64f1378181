"""Execution: where dispatched work runs (the embedded worker pool; Celery later)."""
