"""Benchmarks and harnesses of Ostinato's Celery side: its beats against Celery's own beat (on a simulated clock, at scale, under chaos) and the dispatch of tasks to Celery workers."""
