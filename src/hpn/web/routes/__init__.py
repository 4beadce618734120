"""The dashboard's routes by purpose, one :class:`fastapi.APIRouter` each: runs (list, one
run, charts, files, compare), fabric views, commands and jobs, HTML pages and static files.
:func:`hpn.web.app.create_app` includes them behind its middleware."""
