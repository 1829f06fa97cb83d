"""``stepsaga console``: a local web app over the backend the CLI uses.

``app.py`` holds the pages, ``security.py`` the token, CSRF and header rules,
``layout.py`` the saga graph's geometry, ``timeline.py`` the history as a person reads it,
``serve.py`` the uvicorn runner. Templates and static files ship in the wheel
(``templates/``, ``static/``); nothing is loaded from anywhere else. Needs the ``console``
extra (Starlette, Jinja2, uvicorn, python-multipart).
"""

from stepsaga.console._app import ConsoleConfig, create_app
from stepsaga.console._security import csrf_token, new_token
from stepsaga.console._serve import bind, running, serve, url_of

__all__ = [
    "ConsoleConfig",
    "bind",
    "create_app",
    "csrf_token",
    "new_token",
    "running",
    "serve",
    "url_of",
]
