"""The console's gate: the token, the CSRF field, cross-site POSTs, hosts and headers."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.testclient import TestClient

from stepsaga._project.home import StateHome
from stepsaga.console import create_app
from stepsaga.console._security import SECURITY_HEADERS, cookie_name, csrf_token
from tests.framework.functional.console_support import TOKEN, local_config


@pytest.fixture
def anonymous(tmp_path: Path) -> TestClient:
    return TestClient(
        create_app(local_config(StateHome(tmp_path / "home"))), base_url="http://127.0.0.1"
    )


@pytest.mark.parametrize(
    "path", ["/", "/executions", "/reconciliation", "/ledger", "/search?q=x", "/static/../ledger"]
)
def test_without_the_token_every_page_is_403(anonymous: TestClient, path: str) -> None:
    response = anonymous.get(path, follow_redirects=False)
    assert response.status_code == 403
    assert "token" in response.text
    assert "restarted" in response.text  # the refusal says why and how to get back
    assert "--token-file" in response.text


def test_only_the_stylesheet_and_script_are_served_without_the_token(
    anonymous: TestClient,
) -> None:
    """The refusal page is styled: the console's own static files carry no data."""
    assert anonymous.get("/static/console.css").status_code == 200
    assert anonymous.get("/static/console.js").status_code == 200
    assert anonymous.post("/static/console.css").status_code == 403


def test_a_wrong_token_is_403(anonymous: TestClient) -> None:
    assert anonymous.get("/executions?token=nope").status_code == 403
    anonymous.cookies.set(cookie_name(8765), "nope")
    assert anonymous.get("/executions").status_code == 403


def test_the_token_in_the_url_becomes_a_strict_cookie_and_leaves_the_url(
    anonymous: TestClient,
) -> None:
    response = anonymous.get(f"/ledger?tenant=acme&token={TOKEN}", follow_redirects=False)
    assert response.status_code == 303
    assert response.headers["location"] == "/ledger?tenant=acme"
    cookie = response.headers["set-cookie"]
    assert cookie.startswith(f"{cookie_name(8765)}={TOKEN};")
    assert "HttpOnly" in cookie
    assert "SameSite=strict" in cookie
    assert anonymous.get("/ledger?tenant=acme").status_code == 200  # the cookie is kept


def test_an_authorization_header_carries_the_token(anonymous: TestClient) -> None:
    assert anonymous.get("/ledger", headers={"Authorization": f"Token {TOKEN}"}).status_code == 200


def _logged_in(client: TestClient) -> TestClient:
    client.cookies.set(cookie_name(8765), TOKEN)
    return client


def test_a_post_without_the_csrf_field_is_refused(anonymous: TestClient) -> None:
    client = _logged_in(anonymous)
    response = client.post(
        "/reconciliation/rec-1/resolve", data={"outcome": "applied", "note": "x"}
    )
    assert response.status_code == 403
    assert "CSRF" in response.text


def test_a_post_with_another_origin_is_refused_even_with_the_field(anonymous: TestClient) -> None:
    client = _logged_in(anonymous)
    data = {"csrf": csrf_token(TOKEN), "outcome": "applied", "note": "x"}
    response = client.post(
        "/reconciliation/rec-1/resolve", data=data, headers={"Origin": "http://127.0.0.1:9999"}
    )
    assert (response.status_code, response.text) == (
        403,
        "403: cross-site request from http://127.0.0.1:9999 refused",
    )
    fetch = client.post(
        "/reconciliation/rec-1/resolve", data=data, headers={"Sec-Fetch-Site": "cross-site"}
    )
    assert fetch.status_code == 403


def test_a_post_with_the_field_reaches_the_backend(anonymous: TestClient) -> None:
    client = _logged_in(anonymous)
    data = {"csrf": csrf_token(TOKEN), "outcome": "applied", "note": "checked"}
    response = client.post(
        "/reconciliation/rec-1/resolve", data=data, headers={"Origin": "http://127.0.0.1"}
    )
    assert response.status_code == 404  # past the gate: the backend has no such item
    assert "no reconciliation item" in response.text


def test_the_token_is_never_accepted_in_a_post_url(anonymous: TestClient) -> None:
    response = anonymous.post(f"/executions/x/redrive?token={TOKEN}", data={})
    assert response.status_code == 403


def test_another_host_name_is_refused(anonymous: TestClient) -> None:
    client = _logged_in(anonymous)
    response = client.get("/ledger", headers={"Host": "evil.example"})
    assert response.status_code == 400


def test_every_response_carries_the_security_headers(anonymous: TestClient) -> None:
    for response in (anonymous.get("/ledger"), _logged_in(anonymous).get("/ledger")):
        for name, value in SECURITY_HEADERS.items():
            assert response.headers[name] == value
    assert "script-src 'self'" in SECURITY_HEADERS["content-security-policy"]


def test_the_csrf_value_depends_on_the_token() -> None:
    assert csrf_token("a") != csrf_token("b")
    assert csrf_token("a") == csrf_token("a")
    assert TOKEN not in csrf_token(TOKEN)
