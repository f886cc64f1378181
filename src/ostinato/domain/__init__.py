"""Pure rules of Ostinato: durations and times, the task model and its outcome maths.

Nothing in this package imports the store, the services or any interface.
"""
