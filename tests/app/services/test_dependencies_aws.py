"""The reference app's ``Dependencies.aws``: the services over HTTPS, each one the stack
declared as a signed API signed with the function's role, the others unsigned."""

from __future__ import annotations

import json
from typing import Any

import pytest

from services import dependencies as module
from services.dependencies import ReferenceDependencies
from stepsaga import AwsContext, SystemClock
from stepsaga._aws.signing import ENV_SIGNED_APIS, AwsSigV4, SignedService

ENV = {
    "STEPSAGA_SERVICES": "http",
    "STEPSAGA_INVENTORY_URL": "https://inventory.example.com",
    "STEPSAGA_PAYMENTS_URL": "https://a1b2c3.execute-api.eu-west-1.amazonaws.com/prod",
    "STEPSAGA_SHIPPING_URL": "https://shipping.example.com",
    "AWS_REGION": "eu-west-1",
}


def _auth_given(monkeypatch: pytest.MonkeyPatch, environ: dict[str, str]) -> dict[str, Any]:
    given: dict[str, Any] = {}

    def opened(config: object, *, auth: dict[str, Any] | None = None) -> object:
        given.update(auth or {})
        return object()

    monkeypatch.setattr(module, "open_http_services", opened)
    ReferenceDependencies().aws(AwsContext(SystemClock(), environ))
    return given


def test_a_service_declared_signed_gets_a_sigv4_signer(monkeypatch: pytest.MonkeyPatch) -> None:
    declared = {"STEPSAGA_PAYMENTS_URL": {"service": "execute-api"}}
    auth = _auth_given(monkeypatch, {**ENV, ENV_SIGNED_APIS: json.dumps(declared)})
    assert set(auth) == {"payments"}
    signer = auth["payments"]
    assert isinstance(signer, AwsSigV4)
    assert (signer.service, signer.region) == (SignedService.EXECUTE_API, "eu-west-1")


def test_without_signed_apis_nothing_is_signed(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _auth_given(monkeypatch, ENV) == {}
