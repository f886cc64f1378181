"""The web console: the pages for people that the API serves at ``/`` and under ``/dashboard``,
server-rendered, with no script, behind a sign-in with an API token.

Its modules, by what they hold (each shares only public names with the others):

- **routes**: :mod:`.routes_main` (the main page, a schedule's page, the style sheets),
  :mod:`.routes_drill` (the drill-down pages: visit types, listers, origins, task types, tasks and
  their runs) and :mod:`.routes_history` (the history's charts, and its samples as JSON under
  ``/api/v1``);
- **gathering**, what the pages read from the store, in bounded reads: :mod:`.gather_main` (the main
  page and a schedule's page), :mod:`.gather_drill` (the drill-down pages), :mod:`.gather_tasks` (a
  task type's and a task's page beyond that) and :mod:`.gather_grid` (the run grids);
- **templates**: ``templates/`` (the pages and their style sheets), :mod:`.render` (their Jinja
  environment, the headers every page is served with, the formatting they share),
  :mod:`.render_lag` (a visit type's lag histogram) and :mod:`.render_charts` (the history's charts),
  both inline SVG;
- **actions**: :mod:`.actions`, what an admin may do from a page (pause, resume, run now; disable,
  enable, retry), each a form checked against other sites and recorded in the audit trail;
- **sign-in**: :mod:`.signin` (the check every page's request passes, and the routes that open and
  close a session), :mod:`.signin_sessions` (the sessions and the limit on failed sign-ins) and
  :mod:`.signin_origin` (whether a form came from a page of this server).

:func:`ostinato.api.create_app` includes its routers.
"""
