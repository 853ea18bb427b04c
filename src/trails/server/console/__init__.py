"""The web console of ``trails serve``, a room of its own inside ``server``.

The console turns the evidence the endpoint serves into pages a person reads in a
browser: the sessions, one session's steps and seal, search, the query pack, the
SPARQL editor, verification, compliance and charts. Its modules, templates
(``templates/``) and its one stylesheet (``static/``) live here, beside each other:

- ``routes``: the Starlette routes at ``/console/`` (``mount_console``);
- ``base``: the login, its cookie and CSRF value, the grant's views, rendering;
- ``store``: a read-only store view over the endpoint's evaluator, under a grant;
- ``sessions``: the sessions list's rows, filters and totals from the catalogue;
- ``pages``: the sessions list, a session's page, downloads and search;
- ``tools``: the query pack, the SPARQL editor, verify, compliance and charts;
- ``controls``: the Controls page and a session's controls, from recorded evaluations;
- ``svg``: the timeline and the bar charts as inline SVG;
- ``graph``: a session's provenance graph as data the vendored dagre lays out in the
  browser (list members folded, the goal-to-answer path marked);
- ``diff``: two sessions side by side, the first divergence as ``trails diff`` finds it;
- ``live``: the server-sent events behind the live pages, one watcher for them all.

Nothing here is imported on ``import trails.server.console``: the endpoint mounts
the console through ``routes`` only when it serves one.
"""

__all__: list[str] = []
