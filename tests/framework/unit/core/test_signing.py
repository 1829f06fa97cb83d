"""SigV4 for the app's IAM-authorized APIs: the signature botocore's ``SigV4Auth`` computes
for the same request, the body hash signed, credentials read per request, none shown."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime

import httpx
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import ReadOnlyCredentials
from hypothesis import given, settings
from hypothesis import strategies as st

from stepsaga import AwsContext, SystemClock
from stepsaga._aws.signing import (
    CONTENT_SHA256,
    ENV_SIGNED_APIS,
    AwsSigV4,
    SignedApis,
    SignedService,
)
from stepsaga.errors import InvalidInputError

NOW = datetime(2026, 11, 29, 12, 0, 0)
KEY = ReadOnlyCredentials(
    "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "session-token-example"
)
API = "https://a1b2c3.execute-api.eu-west-1.amazonaws.com/prod"
ENV = {
    "PAYMENTS_API_URL": API,
    ENV_SIGNED_APIS: json.dumps({"PAYMENTS_API_URL": {"service": "execute-api"}}),
    "AWS_REGION": "eu-west-1",
}


@pytest.fixture(autouse=True)
def frozen_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("botocore.auth.get_current_datetime", lambda *a, **k: NOW)


class Recorder:
    """A transport that keeps each request as it leaves the client."""

    def __init__(self) -> None:
        self.seen: list[httpx.Request] = []
        self.transport = httpx.MockTransport(self._answer)

    def _answer(self, request: httpx.Request) -> httpx.Response:
        self.seen.append(request)
        return httpx.Response(200, json={})


def _sent(apis: SignedApis, method: str, path: str, **kwargs: object) -> httpx.Request:
    recorder = Recorder()
    with apis.client("PAYMENTS_API_URL", transport=recorder.transport) as client:
        client.request(method, path, **kwargs)  # type: ignore[arg-type]
    (request,) = recorder.seen
    return request


def _botocore(method: str, url: str, body: bytes, content_type: str | None) -> AWSRequest:
    """The same request signed by botocore directly (the reference)."""
    headers = {"host": httpx.URL(url).netloc.decode(), CONTENT_SHA256: _sha256(body)}
    if content_type:
        headers["content-type"] = content_type
    request = AWSRequest(method=method, url=url, data=body, headers=headers)
    SigV4Auth(KEY, "execute-api", "eu-west-1").add_auth(request)
    return request


def _sha256(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


def test_a_known_request_carries_botocores_signature_and_the_body_hash() -> None:
    apis = SignedApis.from_environ(ENV, credentials=lambda: KEY)
    body = {"payment_id": "PAY-991", "amount": "20.00", "currency": "USD"}
    sent = _sent(apis, "POST", "/refunds", params={"case": "CASE-1001"}, json=body)
    assert str(sent.url) == f"{API}/refunds?case=CASE-1001"
    expected = _botocore("POST", str(sent.url), sent.content, "application/json")
    for header in ("Authorization", "X-Amz-Date", "X-Amz-Security-Token", CONTENT_SHA256):
        assert sent.headers[header] == expected.headers[header], header
    assert sent.headers[CONTENT_SHA256] == _sha256(sent.content)
    assert sent.headers["X-Amz-Date"] == "20261129T120000Z"
    authorization = sent.headers["Authorization"]
    assert authorization.startswith(
        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261129/eu-west-1/execute-api/aws4_request, "
        "SignedHeaders=content-type;host;x-amz-content-sha256;x-amz-date;x-amz-security-token, "
        "Signature="
    )


@settings(max_examples=40, deadline=None)
@given(
    method=st.sampled_from(["GET", "POST", "PUT", "DELETE"]),
    path=st.lists(st.text("abcXYZ019-_.~", min_size=1, max_size=8), max_size=3),
    body=st.binary(max_size=200),
)
def test_any_request_is_signed_as_botocore_signs_it(
    method: str, path: list[str], body: bytes
) -> None:
    auth = AwsSigV4(SignedService.EXECUTE_API, "eu-west-1", lambda: KEY)
    request = httpx.Request(method, f"{API}/{'/'.join(path)}", content=body)
    auth.sign(request)
    expected = _botocore(method, str(request.url), body, None)
    assert request.headers["Authorization"] == expected.headers["Authorization"]
    assert request.headers[CONTENT_SHA256] == _sha256(body)


def test_a_body_changed_after_signing_no_longer_matches() -> None:
    """The body hash is part of what is signed: a tampered body is a different signature."""
    auth = AwsSigV4(SignedService.LAMBDA, "eu-west-1", lambda: KEY)
    request = httpx.Request("POST", "https://x.lambda-url.eu-west-1.on.aws/", content=b"20.00")
    auth.sign(request)
    tampered = _botocore("POST", str(request.url), b"25.00", None)
    assert "lambda/aws4_request" in request.headers["Authorization"]
    assert request.headers["Authorization"] != tampered.headers["Authorization"]


def test_credentials_are_read_for_every_request_so_rotated_ones_are_used() -> None:
    keys = iter([KEY, ReadOnlyCredentials("AKIDROTATED", "another-secret", "token-2")])
    apis = SignedApis.from_environ(ENV, credentials=lambda: next(keys))
    recorder = Recorder()
    with apis.client("PAYMENTS_API_URL", transport=recorder.transport) as client:
        client.get("/refunds/R-1")
        client.get("/refunds/R-1")
    first, second = recorder.seen
    assert "Credential=AKIDEXAMPLE/" in first.headers["Authorization"]
    assert "Credential=AKIDROTATED/" in second.headers["Authorization"]
    assert second.headers["X-Amz-Security-Token"] == "token-2"


def test_by_default_the_functions_own_credentials_sign(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inside Lambda the role's credentials are in botocore's chain (here: the variables)."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDFROMROLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "role-secret")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "role-token")
    recorder = Recorder()
    apis = AwsContext(SystemClock(), ENV).signed_apis
    with apis.client("PAYMENTS_API_URL", timeout=5.0, transport=recorder.transport) as client:
        client.get("/health")
    (sent,) = recorder.seen
    assert (
        "Credential=AKIDFROMROLE/20261129/eu-west-1/execute-api/" in sent.headers["Authorization"]
    )
    assert sent.headers["X-Amz-Security-Token"] == "role-token"


def test_nothing_secret_is_shown() -> None:
    apis = SignedApis.from_environ(ENV, credentials=lambda: KEY)
    shown = repr(apis) + repr(apis.auth("PAYMENTS_API_URL"))
    assert str(KEY.secret_key) not in shown
    assert str(KEY.token) not in shown
    assert repr(apis.auth("PAYMENTS_API_URL")) == (
        "AwsSigV4(service='execute-api', region='eu-west-1')"
    )


def test_a_declared_region_wins_over_the_functions() -> None:
    declared = {"PAYMENTS_API_URL": {"service": "execute-api", "region": "us-east-1"}}
    apis = SignedApis.from_environ({**ENV, ENV_SIGNED_APIS: json.dumps(declared)})
    assert apis.target("PAYMENTS_API_URL").region == "us-east-1"


@pytest.fixture
def no_region(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)


@pytest.mark.parametrize(
    ("environ", "field", "words"),
    [
        ({**ENV, ENV_SIGNED_APIS: "[1]"}, ENV_SIGNED_APIS, "not a JSON object"),
        (
            {**ENV, ENV_SIGNED_APIS: json.dumps({"PAYMENTS_API_URL": {"service": "s3"}})},
            ENV_SIGNED_APIS,
            "not a JSON object",
        ),
        ({**ENV, "PAYMENTS_API_URL": "http://plain.example"}, "PAYMENTS_API_URL", "https://"),
        ({k: v for k, v in ENV.items() if k != "AWS_REGION"}, "PAYMENTS_API_URL", "no region"),
    ],
)
def test_bad_configuration_is_one_line_naming_the_variable(
    no_region: None, environ: dict[str, str], field: str, words: str
) -> None:
    with pytest.raises(InvalidInputError) as caught:
        SignedApis.from_environ(environ)
    assert caught.value.data["field"] == field
    assert words in caught.value.message
    assert "\n" not in caught.value.message


def test_an_api_not_configured_for_the_function_is_named() -> None:
    with pytest.raises(InvalidInputError) as caught:
        SignedApis.from_environ(ENV).client("BILLING_API_URL")
    assert caught.value.message == (
        "signed API BILLING_API_URL: not configured for this function (its signed APIs: "
        "PAYMENTS_API_URL)"
    )
