"""Who may use the console, and which requests may change anything: the rules in one place.

* **Token** (as Jupyter does): a random token is printed at start. A request shows it as
  ``?token=…`` (the console then sets an HttpOnly, SameSite=Strict cookie and redirects to
  the same URL without it, so the token leaves the address bar and the history), as the
  cookie, or as ``Authorization: Token …``. Anything else gets 403.
* **Who** (``--operators-file``): each person may have a personal token, stored hashed
  (SHA-256) in a 0600 file; a request that shows one acts as that person (the console takes
  the identity from the credential, never from a form), so two people on one local console
  can complete dual control. The console's own token acts as the backend's operator (the
  OS user), as without the file.
* **Cross-site requests**: every state change is a POST whose form carries ``csrf``, an
  HMAC of the token (a page of another origin cannot read it), and whose ``Origin`` and
  ``Sec-Fetch-Site`` headers, when the browser sends them, say this origin. Ports do not
  separate sites, so another server on 127.0.0.1 still gets the cookie: the form field is
  what refuses it.
* **Headers**: a Content-Security-Policy that allows only this origin's scripts and styles
  (no inline script, so an escaping mistake still runs nothing), no framing, no referrer
  to other sites.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any, Final
from urllib.parse import parse_qsl, urlencode

from starlette.datastructures import URL, FormData, Headers
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response

from stepsaga.errors import InvalidInputError

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

TOKEN_PARAMETER: Final = "token"  # noqa: S105 (a query parameter name)
CSRF_FIELD: Final = "csrf"
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_SAME_SITE_FETCH = frozenset({"same-origin", "none"})

SECURITY_HEADERS: Final = {
    "content-security-policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    # same-origin, not no-referrer: with no-referrer Chromium sends ``Origin: null`` on the
    # console's own POSTs. The token never stays in a URL to leak (see ``_login``).
    "referrer-policy": "same-origin",
    "cache-control": "no-store",
}


def new_token() -> str:
    """256 random bits, URL-safe."""
    return secrets.token_urlsafe(32)


#: A token read from ``--token-file`` must be at least this long (``new_token`` makes 43).
MIN_TOKEN_LENGTH: Final = 32
#: What goes into the printed URL unquoted (``new_token``'s alphabet).
_URL_SAFE_TOKEN: Final = re.compile(rf"[A-Za-z0-9_-]{{{MIN_TOKEN_LENGTH},}}")


def token_from_file(path: Path) -> str:
    """The token kept in ``path`` (``stepsaga console --token-file``), so the URL and the
    browser's cookie survive restarts. Created with a new token, mode 0600, when absent;
    a file others may read, or holding too short a token, is refused (``InvalidInputError``
    naming the option), nothing written."""
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        pass
    except OSError as exc:
        raise InvalidInputError(
            f"--token-file: cannot create {path} ({exc.strerror})", field="token_file"
        ) from None
    else:
        token = new_token()
        with os.fdopen(descriptor, "w") as created:
            created.write(token + "\n")
        return token
    try:
        mode = path.stat().st_mode
        text = path.read_text().strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInputError(
            f"--token-file: cannot read {path} ({exc})", field="token_file"
        ) from None
    if mode & 0o077:
        raise InvalidInputError(
            f"--token-file: {path} is readable by other users (chmod 600 {path})",
            field="token_file",
        )
    if not _URL_SAFE_TOKEN.fullmatch(text):
        raise InvalidInputError(
            f"--token-file: {path} must hold one token of at least {MIN_TOKEN_LENGTH} "
            "letters, digits, - or _ (delete it to have a new one made)",
            field="token_file",
        )
    return text


#: The request scope's key for who sent it: a name from ``--operators-file``, or ``None``
#: for the console's own token (the backend's operator acts).
OPERATOR_SCOPE_KEY: Final = "stepsaga.operator"


_NAME: Final = re.compile(r"[^\t\x00-\x1f\x7f]{1,200}")


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _private(path: Path, option: str) -> None:
    if path.stat().st_mode & 0o077:
        raise InvalidInputError(
            f"{option}: {path} is readable by other users (chmod 600 {path})", field=option
        )


def read_operators(path: Path) -> dict[str, str]:
    """``--operators-file``: ``{SHA-256 of a personal token: who}``, one ``name<TAB>digest``
    a line. Refused (one line naming the option) when absent, readable by others or
    malformed."""
    option = "--operators-file"
    try:
        _private(path, option)
        lines = path.read_text().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"{option}: cannot read {path} ({exc})", field=option) from None
    found: dict[str, str] = {}
    for number, line in enumerate(lines, 1):
        name, _, digest = line.partition("\t")
        if not re.fullmatch(r"[0-9a-f]{64}", digest):
            raise InvalidInputError(
                f"{option}: {path} line {number} is not 'name<TAB>token digest' "
                "(add people with --add-operator)",
                field=option,
            )
        if not _NAME.fullmatch(name):
            raise InvalidInputError(f"{option}: {path} line {number} has no name", field=option)
        found[digest] = name
    return found


def add_operator(path: Path, name: str) -> str:
    """Give ``name`` (the CLI checked it is a person's id) a new personal token, replacing
    theirs if any, and return it; only its digest is written, to ``path`` (created 0600 if
    absent)."""
    who = name.strip()
    if not _NAME.fullmatch(who):
        raise InvalidInputError("--add-operator: a name, without tabs", field="--add-operator")
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.close(descriptor)
    except FileExistsError:
        pass
    except OSError as exc:
        raise InvalidInputError(
            f"--operators-file: cannot create {path} ({exc.strerror})", field="--operators-file"
        ) from None
    kept = {digest: person for digest, person in read_operators(path).items() if person != who}
    token = new_token()
    kept[_digest(token)] = who
    path.write_text("".join(f"{person}\t{digest}\n" for digest, person in kept.items()))
    return token


def csrf_token(token: str) -> str:
    """The value every form carries: derived from the token, so it needs no state."""
    return hmac.new(token.encode(), b"stepsaga-console-csrf", hashlib.sha256).hexdigest()


def cookie_name(port: int) -> str:
    """Cookies ignore ports: one name per port keeps two consoles apart."""
    return f"stepsaga_console_{port}"


class ForbiddenError(Exception):
    """A request the rules above refuse (403, with the reason as its text)."""


def check_csrf(form: FormData, token: str) -> None:
    """Refuse a form without this console's ``csrf`` value."""
    sent = form.get(CSRF_FIELD)
    if not isinstance(sent, str) or not hmac.compare_digest(sent, csrf_token(token)):
        raise ForbiddenError("403: this form was not sent by the console's own page (CSRF check)")


class TokenGate:
    """ASGI middleware enforcing the token, the cross-site rules for POSTs and the headers."""

    def __init__(
        self, app: ASGIApp, *, token: str, port: int, operators: Mapping[str, str] | None = None
    ) -> None:
        self.app = app
        self.token = token
        self.cookie = cookie_name(port)
        #: ``{digest of a personal token: who}`` (``read_operators``).
        self.operators = dict(operators or {})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        response = self._refusal(request)
        scope[OPERATOR_SCOPE_KEY] = self._who(request.headers)
        if response is not None:
            await _with_headers(response)(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", [])]
                headers += [(k.encode(), v.encode()) for k, v in SECURITY_HEADERS.items()]
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_with_headers)

    def _refusal(self, request: Request) -> Response | None:
        shown = request.query_params.get(TOKEN_PARAMETER)
        if shown is not None:
            if not self._valid(shown):
                return _forbidden("403: wrong token")
            if request.method not in _SAFE_METHODS:
                return _forbidden("403: the token goes in the URL of a page, not of a POST")
            return self._login(request.url, shown)
        if not self._authenticated(request.headers):
            if request.method in _SAFE_METHODS and request.url.path.startswith(PUBLIC_PREFIX):
                return None  # the stylesheet and script ship in the wheel: nothing secret
            return _sign_in_again()
        if request.method not in _SAFE_METHODS:
            return _cross_site(request)
        return None

    def _valid(self, token: str) -> bool:
        return hmac.compare_digest(token, self.token) or self._person(token) is not None

    def _person(self, token: str) -> str | None:
        """Who holds this personal token (its digest looked up; digests are not secret)."""
        return self.operators.get(_digest(token)) if self.operators else None

    def _presented(self, headers: Headers) -> str | None:
        authorization = headers.get("authorization", "")
        if authorization.startswith("Token "):
            return authorization[6:].strip()
        cookies = SimpleCookie()
        try:
            cookies.load(headers.get("cookie", ""))
        except Exception:  # a malformed Cookie header is no token
            return None
        morsel = cookies.get(self.cookie)
        return morsel.value if morsel is not None else None

    def _authenticated(self, headers: Headers) -> bool:
        presented = self._presented(headers)
        return presented is not None and self._valid(presented)

    def _who(self, headers: Headers) -> str | None:
        """The person a personal token names; ``None`` for the console's own token."""
        presented = self._presented(headers)
        return self._person(presented) if presented is not None else None

    def _login(self, url: URL, token: str) -> Response:
        query = urlencode([(k, v) for k, v in parse_qsl(url.query) if k != TOKEN_PARAMETER])
        response = RedirectResponse(
            url.replace(query=query).path + (f"?{query}" if query else ""), 303
        )
        response.set_cookie(self.cookie, token, httponly=True, samesite="strict", path="/")
        return response


def _cross_site(request: Request) -> Response | None:
    origin = request.headers.get("origin")
    own = f"{request.url.scheme}://{request.url.netloc}"
    if origin is not None and origin != own:
        return _forbidden(f"403: cross-site request from {origin} refused")
    fetch_site = request.headers.get("sec-fetch-site")
    if fetch_site is not None and fetch_site not in _SAME_SITE_FETCH:
        return _forbidden(f"403: cross-site request ({fetch_site}) refused")
    return None


#: What is served without the token: the console's own stylesheet and script (so the
#: refusal page below is styled), nothing that shows data.
PUBLIC_PREFIX: Final = "/static/"

_SIGN_IN_AGAIN: Final = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Open the console's URL again · stepsaga</title>
<link rel="stylesheet" href="/static/console.css">
<script src="/static/console.js" defer></script></head>
<body data-keep-drafts><header class="top"><span class="brand">stepsaga console</span></header>
<main id="content"><h1>Open the console's URL again</h1>
<p class="error" id="error-message">403: this browser has no valid token for this console.</p>
<p>The console was probably restarted: each start prints a new URL with a new token
(<code>stepsaga console</code> shows it). Open that URL once and this page works again.</p>
<p>To keep one URL across restarts, start it with <code>stepsaga console --token-file PATH</code>
(the token is created there once, readable by you only, and reused).</p>
<p>What you had typed into a form is kept in this browser and comes back when you open
the page again.</p>
</main></body></html>
"""


def _sign_in_again() -> Response:
    """A styled 403 that says why and how to get back; its script keeps the drafts of a
    form sent to the restarted console (``static/console.js``)."""
    return HTMLResponse(_SIGN_IN_AGAIN, status_code=403)


def _forbidden(text: str) -> Response:
    return PlainTextResponse(text, status_code=403)


def _with_headers(response: Response) -> Response:
    for name, value in SECURITY_HEADERS.items():
        response.headers[name] = value
    return response
