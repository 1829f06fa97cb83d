"""HTTP adapters against real local servers (pytest-httpserver and raw sockets), no mocks."""

from __future__ import annotations

import hashlib
import json
import socket
import ssl
import struct
import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

import httpx
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import ReadOnlyCredentials
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from services import (
    HttpServicesConfig,
    HttpTimeouts,
    ReservationStatus,
    Services,
    open_http_services,
)
from stepsaga._aws.signing import AwsSigV4, SignedService
from stepsaga._model.money import Money
from stepsaga.errors import (
    ActionConflictError,
    ActionInProgressError,
    BusinessRejectedError,
    InvalidInputError,
    NotFoundError,
    OutcomeUnknownError,
    StepSagaError,
    TransientError,
)
from tests.app.services.conftest import (
    ctx_for,
    refund_request,
    reserve_request,
    shipment_request,
)

FAST = HttpTimeouts(connect=1.0, read=0.3, write=1.0, pool=1.0)
CREATED = "2026-11-29T12:00:00Z"


@pytest.fixture(scope="module")
def server() -> Iterator[HTTPServer]:
    """Threaded, so a handler that sleeps past our read timeout blocks nobody else."""
    srv = HTTPServer(threaded=True)
    srv.start()
    yield srv
    srv.clear()
    if srv.is_running():
        srv.stop()


@pytest.fixture(scope="module")
def tls() -> ssl.SSLContext:
    """httpx's default TLS context, built once: a client builds its own by loading the CA
    bundle (~0.1 s), three per ``open_http_services``."""
    return httpx.create_ssl_context()


@pytest.fixture
def http(server: HTTPServer, tls: ssl.SSLContext) -> Iterator[Services]:
    server.clear()
    url = server.url_for("/api")
    config = HttpServicesConfig(url, url, url, timeouts=FAST)
    with open_http_services(config, transport=httpx.HTTPTransport(verify=tls)) as services:
        yield services
    server.check_assertions()


Seen = list[Request]


def recording(seen: Seen, reply: Callable[[Request], Response]) -> Callable[[Request], Response]:
    def handler(request: Request) -> Response:
        seen.append(request)
        return reply(request)

    return handler


def json_reply(data: Any, status: int = 200, **headers: str) -> Response:
    return Response(json.dumps(data), status=status, headers=headers, mimetype="application/json")


def reservation_json(status: str = "reserved") -> dict[str, Any]:
    request = reserve_request()
    return {
        "reservation_id": request.reservation_id,
        "sku": request.sku,
        "quantity": request.quantity,
        "warehouse": request.warehouse,
        "status": status,
        "created_at": CREATED,
        "added_later": "ignored",
    }


def refund_json() -> dict[str, Any]:
    request = refund_request()
    return {
        "refund_id": "re_1",
        "payment_id": request.payment_id,
        "amount_minor": 2000,
        "currency": "USD",
        "idempotency_key": request.idempotency_key,
        "created_at": CREATED,
    }


def shipment_json() -> dict[str, Any]:
    return {
        "shipment_id": "shp_1",
        "reference": shipment_request().reference,
        "created_at": CREATED,
    }


# --- the wire contract ---------------------------------------------------------------------


def test_reserve_puts_to_the_reservation_id_with_it_as_key(
    server: HTTPServer, http: Services
) -> None:
    seen: Seen = []
    path = "/api/reservations/acme:CASE-1001:r1:reserve"
    server.expect_request(path, method="PUT").respond_with_handler(
        recording(seen, lambda _: json_reply(reservation_json(), 201))
    )
    reservation = http.inventory.reserve(ctx_for("reserve"), reserve_request())
    assert reservation.status is ReservationStatus.RESERVED
    assert reservation.created_at.isoformat() == "2026-11-29T12:00:00+00:00"
    (request,) = seen
    assert "acme%3ACASE-1001%3Ar1%3Areserve" in request.environ["REQUEST_URI"]
    assert request.headers["Idempotency-Key"] == "acme:CASE-1001:r1:reserve"
    assert request.headers["X-Tenant-Id"] == "acme"
    assert request.headers["X-Correlation-Id"] == "acme:CASE-1001:r1:reserve"
    assert request.headers["X-Attempt"] == "1"
    assert request.json == {"sku": "SKU-RED-MUG", "quantity": 1, "warehouse": "eu-west"}


def test_release_and_lookup(server: HTTPServer, http: Services) -> None:
    seen: Seen = []
    path = "/api/reservations/acme:CASE-1001:r1:reserve"
    server.expect_request(f"{path}/release", method="POST").respond_with_handler(
        recording(seen, lambda _: json_reply(reservation_json("released")))
    )
    server.expect_request(path, method="GET").respond_with_json(reservation_json("released"))
    ctx = ctx_for("reserve:compensate:release")
    reservation_id = reserve_request().reservation_id
    assert http.inventory.release(ctx, reservation_id).status is ReservationStatus.RELEASED
    found = http.inventory.find_reservation(ctx, reservation_id)
    assert found is not None
    assert found.status is ReservationStatus.RELEASED
    (release,) = seen
    assert "Idempotency-Key" not in release.headers  # not the reserve's key on another endpoint
    assert release.headers["X-Correlation-Id"] == ctx.action_key


def test_releasing_an_unknown_reservation_is_not_found(server: HTTPServer, http: Services) -> None:
    server.expect_request("/api/reservations/R-9/release").respond_with_json(
        {"error": {"code": "not_found"}}, status=404
    )
    with pytest.raises(NotFoundError):
        http.inventory.release(ctx_for("release"), "R-9")


def test_lookup_404_is_absent(server: HTTPServer, http: Services) -> None:
    server.expect_request("/api/reservations/R-9").respond_with_data("", status=404)
    assert http.inventory.find_reservation(ctx_for("reserve"), "R-9") is None


def test_refund_posts_minor_units_with_the_idempotency_key(
    server: HTTPServer, http: Services
) -> None:
    seen: Seen = []
    server.expect_request("/api/refunds", method="POST").respond_with_handler(
        recording(seen, lambda _: json_reply(refund_json(), 201))
    )
    refund = http.payments.refund(ctx_for("refund"), refund_request())
    assert refund.refund_id == "re_1"
    assert refund.amount == Money(2000, "USD")
    (request,) = seen
    assert request.headers["Idempotency-Key"] == "acme:CASE-1001:r1:refund"
    assert request.json == {"payment_id": "PAY-991", "amount_minor": 2000, "currency": "USD"}


def test_find_refund_by_key_queries_the_key(server: HTTPServer, http: Services) -> None:
    key = refund_request().idempotency_key
    server.expect_request(
        "/api/refunds", method="GET", query_string={"idempotency_key": key}
    ).respond_with_json({"data": [refund_json()]})
    server.expect_request(
        "/api/refunds", method="GET", query_string={"idempotency_key": "other"}
    ).respond_with_json({"data": []})
    found = http.payments.find_refund_by_key(ctx_for("refund"), key)
    assert found is not None
    assert found.refund_id == "re_1"
    assert http.payments.find_refund_by_key(ctx_for("refund"), "other") is None


def test_create_shipment_sends_no_idempotency_key(server: HTTPServer, http: Services) -> None:
    seen: Seen = []
    server.expect_request("/api/shipments", method="POST").respond_with_handler(
        recording(seen, lambda _: json_reply(shipment_json(), 201))
    )
    shipment = http.shipping.create_shipment(ctx_for("ship"), shipment_request())
    assert shipment.shipment_id == "shp_1"
    (request,) = seen
    assert "Idempotency-Key" not in request.headers
    assert request.json == {
        "reference": "acme:CASE-1001:r1:ship",
        "address": {
            "name": "A. Buyer",
            "line1": "1 Main St",
            "city": "Berlin",
            "postal_code": "10115",
            "country": "DE",
        },
        "items": [{"sku": "SKU-RED-MUG", "quantity": 1}],
    }


def test_find_shipment_by_reference(server: HTTPServer, http: Services) -> None:
    reference = shipment_request().reference
    server.expect_request(
        "/api/shipments", method="GET", query_string={"reference": reference}
    ).respond_with_json({"data": [shipment_json(), {**shipment_json(), "shipment_id": "shp_2"}]})
    found = http.shipping.find_shipment_by_reference(ctx_for("ship"), reference)
    assert found is not None
    assert found.shipment_id == "shp_1"


# --- error mapping, end to end ------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "code", "expected"),
    [
        (400, "invalid_request", BusinessRejectedError),
        (422, "insufficient_funds", BusinessRejectedError),
        (409, "idempotency_key_in_use", ActionInProgressError),
        (409, "idempotency_key_reused", ActionConflictError),
        (429, "throttled", TransientError),
        (503, None, TransientError),
        (401, None, TransientError),
        (500, None, OutcomeUnknownError),
        (502, None, OutcomeUnknownError),
        (504, None, OutcomeUnknownError),
    ],
)
def test_refund_statuses(
    server: HTTPServer,
    http: Services,
    status: int,
    code: str | None,
    expected: type[StepSagaError],
) -> None:
    error_body = {"error": {"code": code}} if code else {}
    server.expect_request("/api/refunds").respond_with_json(error_body, status=status)
    with pytest.raises(expected) as caught:
        http.payments.refund(ctx_for("refund"), refund_request())
    assert caught.value.data["status"] == status
    assert caught.value.data["service"] == "payments"


@pytest.mark.parametrize("status", [400, 409, 429, 500, 503])
def test_lookup_failures_are_transient(server: HTTPServer, http: Services, status: int) -> None:
    server.expect_request("/api/shipments").respond_with_json({}, status=status)
    with pytest.raises(TransientError):
        http.shipping.find_shipment_by_reference(ctx_for("ship"), "R")


def test_retry_after_header_reaches_the_error(server: HTTPServer, http: Services) -> None:
    server.expect_request("/api/refunds").respond_with_json(
        {"error": {"code": "idempotency_key_in_use"}}, status=409, headers={"Retry-After": "4"}
    )
    with pytest.raises(ActionInProgressError) as caught:
        http.payments.refund(ctx_for("refund"), refund_request())
    assert caught.value.retry_after_seconds == 4


@pytest.mark.parametrize(
    "reply",
    [
        Response("<html>oops</html>", status=200),
        Response(json.dumps({"shipment_id": "shp_1"}), status=201),  # reference missing
        Response(json.dumps({**shipment_json(), "created_at": "2026-11-29T12:00:00"}), status=201),
    ],
    ids=["not-json", "missing-field", "naive-timestamp"],
)
def test_an_unreadable_success_on_a_write_is_uncertain(
    server: HTTPServer, http: Services, reply: Response
) -> None:
    server.expect_request("/api/shipments", method="POST").respond_with_response(reply)
    with pytest.raises(OutcomeUnknownError):
        http.shipping.create_shipment(ctx_for("ship"), shipment_request())


def test_an_unreadable_lookup_is_transient(server: HTTPServer, http: Services) -> None:
    server.expect_request("/api/refunds").respond_with_json({"data": [{"refund_id": 1}]})
    with pytest.raises(TransientError):
        http.payments.find_refund_by_key(ctx_for("refund"), "k")


def test_a_refund_in_an_unknown_currency_is_unreadable(server: HTTPServer, http: Services) -> None:
    server.expect_request("/api/refunds").respond_with_json({**refund_json(), "currency": "XYZ"})
    with pytest.raises(OutcomeUnknownError, match="currency"):
        http.payments.refund(ctx_for("refund"), refund_request())


def slow(seconds: float, reply: Response) -> Callable[[Request], Response]:
    def handler(_: Request) -> Response:
        time.sleep(seconds)
        return reply

    return handler


def test_a_write_that_times_out_after_sending_is_uncertain(
    server: HTTPServer, http: Services
) -> None:
    seen: Seen = []
    server.expect_request("/api/refunds", method="POST").respond_with_handler(
        recording(seen, slow(FAST.read + 0.3, json_reply(refund_json())))
    )
    with pytest.raises(OutcomeUnknownError) as caught:
        http.payments.refund(ctx_for("refund"), refund_request())
    assert caught.value.data["transport_error"] == "ReadTimeout"
    assert caught.value.data["dispatch"] == "maybe_sent"
    assert len(seen) == 1  # the service did get it: exactly why we cannot say "failed"


def test_a_read_that_times_out_is_transient(server: HTTPServer, http: Services) -> None:
    server.expect_request("/api/shipments", method="GET").respond_with_handler(
        slow(FAST.read + 0.3, json_reply({"data": []}))
    )
    with pytest.raises(TransientError):
        http.shipping.find_shipment_by_reference(ctx_for("ship"), "R")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def test_connection_refused_is_transient_for_every_write() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with open_http_services(HttpServicesConfig(url, url, url, timeouts=FAST)) as http:
        calls: list[Callable[[], object]] = [
            lambda: http.inventory.reserve(ctx_for("reserve"), reserve_request()),
            lambda: http.inventory.release(ctx_for("release"), "R-1"),
            lambda: http.payments.refund(ctx_for("refund"), refund_request()),
            lambda: http.shipping.create_shipment(ctx_for("ship"), shipment_request()),
            lambda: http.shipping.find_shipment_by_reference(ctx_for("ship"), "R"),
        ]
        for call in calls:
            with pytest.raises(TransientError) as caught:
                call()
            assert caught.value.data["dispatch"] == "not_sent"


class HangUpServer:
    """Reads one whole request, then hangs up without replying (``reset``: with an RST)."""

    def __init__(self, *, reset: bool) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self.requests: list[bytes] = []
        self._reset = reset
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        conn, _ = self._listener.accept()
        data = b""
        while b"\r\n\r\n" not in data:
            data += conn.recv(65536)
        head, _, rest = data.partition(b"\r\n\r\n")
        length = next(
            int(line.split(b":", 1)[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        while len(rest) < length:
            rest += conn.recv(65536)
        self.requests.append(head + rest)
        if self._reset:
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        conn.close()

    def close(self) -> None:
        self._thread.join(timeout=5)
        self._listener.close()


@pytest.mark.parametrize("reset", [False, True], ids=["closed", "reset"])
def test_a_connection_lost_after_sending_is_uncertain(reset: bool) -> None:
    peer = HangUpServer(reset=reset)
    try:
        config = HttpServicesConfig(peer.url, peer.url, peer.url, timeouts=FAST)
        with open_http_services(config) as http, pytest.raises(OutcomeUnknownError) as caught:
            http.shipping.create_shipment(ctx_for("ship"), shipment_request())
    finally:
        peer.close()
    assert caught.value.data["dispatch"] == "maybe_sent"
    (request,) = peer.requests
    assert request.startswith(b"POST /shipments")


# --- configuration ------------------------------------------------------------------------


def test_config_from_env() -> None:
    config = HttpServicesConfig.from_env(
        {
            "STEPSAGA_INVENTORY_URL": "http://inventory.internal",
            "STEPSAGA_PAYMENTS_URL": "https://payments.internal/v1",
            "STEPSAGA_SHIPPING_URL": "http://shipping.internal",
            "STEPSAGA_HTTP_READ_TIMEOUT": "2.5",
        }
    )
    assert config.payments_url == "https://payments.internal/v1"
    assert config.timeouts == HttpTimeouts(read=2.5)
    timeout = config.timeouts.to_httpx()
    assert (timeout.connect, timeout.read, timeout.write, timeout.pool) == (2.0, 2.5, 5.0, 2.0)


@pytest.mark.parametrize(
    ("environ", "field"),
    [
        ({}, "STEPSAGA_INVENTORY_URL"),
        (
            {
                "STEPSAGA_INVENTORY_URL": "http://i",
                "STEPSAGA_PAYMENTS_URL": "http://p",
                "STEPSAGA_SHIPPING_URL": "http://s",
                "STEPSAGA_HTTP_POOL_TIMEOUT": "soon",
            },
            "STEPSAGA_HTTP_POOL_TIMEOUT",
        ),
        (
            {
                "STEPSAGA_INVENTORY_URL": "ftp://i",
                "STEPSAGA_PAYMENTS_URL": "http://p",
                "STEPSAGA_SHIPPING_URL": "http://s",
            },
            "inventory_url",
        ),
    ],
)
def test_bad_config_names_the_setting(environ: dict[str, str], field: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        HttpServicesConfig.from_env(environ)
    assert caught.value.data["field"] == field


@pytest.mark.parametrize("value", [0, -1, float("inf"), float("nan"), 301, True])
def test_timeouts_must_be_explicit_and_bounded(value: float) -> None:
    with pytest.raises(InvalidInputError, match=r"timeouts\.read"):
        HttpTimeouts(read=value)


# --- a service behind IAM: SigV4 with the function's role --------------------------------


def test_a_signed_service_gets_requests_the_server_can_verify(
    server: HTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the signed service's requests carry a signature, and it is the one botocore
    computes from what the server received (host, content type, body hash, date, token)."""
    key = ReadOnlyCredentials("AKIDEXAMPLE", "secret-example", "token-example")
    signed_at = datetime(2026, 11, 29, 12, 0, 0)
    monkeypatch.setattr("botocore.auth.get_current_datetime", lambda *a, **k: signed_at)
    server.clear()
    seen: Seen = []
    server.expect_request("/api/refunds", method="POST").respond_with_handler(
        recording(seen, lambda _: json_reply(refund_json(), 201))
    )
    server.expect_request("/api/reservations/RES-1", method="GET").respond_with_handler(
        recording(seen, lambda _: Response("", 404))
    )
    url = server.url_for("/api")
    signer = AwsSigV4(SignedService.EXECUTE_API, "eu-west-1", lambda: key)
    config = HttpServicesConfig(url, url, url, timeouts=FAST)
    with open_http_services(config, auth={"payments": signer}) as services:
        services.payments.refund(ctx_for("refund_payment"), refund_request())
        services.inventory.find_reservation(ctx_for("reserve_stock"), "RES-1")
    signed, unsigned = seen
    assert "Authorization" not in unsigned.headers
    body = signed.get_data()
    assert signed.headers["X-Amz-Content-SHA256"] == hashlib.sha256(body).hexdigest()
    names = ("host", "content-type", "X-Amz-Content-SHA256", "X-Amz-Date", "X-Amz-Security-Token")
    verified = AWSRequest(
        method="POST",
        url=f"{url}/refunds",
        data=body,
        headers={name: signed.headers[name] for name in names},
    )
    SigV4Auth(key, "execute-api", "eu-west-1").add_auth(verified)
    assert signed.headers["Authorization"] == verified.headers["Authorization"]
