"""The rules of Ostinato, pure: every moment comes from a clock handed in (``clock``).

- times: ``durations``, ``zones``, ``wall_clock`` (daylight saving), ``calendars`` (cron, systemd, RRULE);
- tasks: ``tasks`` (the task model and the rules that move a task after a run);
- schedules: ``schedules`` (deadline-greedy scheduling, conditions, start times);
- origins: ``origins`` (listers and listed origins), ``visits`` (visit statuses and the feedback loop),
  ``visit_policies`` (which origins to visit next), ``orchestration`` (a queue's room split between
  policies), ``change_rates`` and ``rate_posterior`` (learning how often an origin changes),
  ``origin_metrics``, ``listing_grabs`` (what the swh protocol asks of the visit stats);
- input: ``limits`` (what every entry point checks), ``imported`` (records written as given), ``errors``.

Nothing in this package imports the store, the services or any interface.
"""
