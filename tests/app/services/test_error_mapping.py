"""Every downstream outcome maps to one of our errors by one rule: could it have applied?"""

from __future__ import annotations

import json

import httpx
import pytest

from services import error_mapping
from services.error_mapping import Dispatch, dispatch_of
from services.faults import FaultKind
from services.values import Operation
from stepsaga.errors import (
    ActionConflictError,
    ActionInProgressError,
    BusinessRejectedError,
    OutcomeUnknownError,
    StepSagaError,
    TransientError,
)

WRITES = [op for op in Operation if op.is_write]
READS = [op for op in Operation if not op.is_write]


def body(code: str | None = None, **extra: object) -> bytes:
    error: dict[str, object] = {"message": "Anna Example, 1 Main St is invalid", **extra}
    if code is not None:
        error["code"] = code
    return json.dumps({"error": error}).encode()


@pytest.mark.parametrize(
    ("exc", "dispatch"),
    [
        (httpx.ConnectError("refused"), Dispatch.NOT_SENT),
        (httpx.ConnectTimeout("slow handshake"), Dispatch.NOT_SENT),
        (httpx.PoolTimeout("no free connection"), Dispatch.NOT_SENT),
        (httpx.UnsupportedProtocol("ftp://"), Dispatch.NOT_SENT),
        (httpx.ReadTimeout("no reply"), Dispatch.MAYBE_SENT),
        (httpx.ReadError("reset"), Dispatch.MAYBE_SENT),
        (httpx.RemoteProtocolError("server disconnected"), Dispatch.MAYBE_SENT),
        (httpx.WriteTimeout("half sent"), Dispatch.MAYBE_SENT),
        (httpx.WriteError("broken pipe"), Dispatch.MAYBE_SENT),
        (httpx.LocalProtocolError("bad request"), Dispatch.MAYBE_SENT),
        (httpx.ProxyError("proxy"), Dispatch.MAYBE_SENT),
    ],
)
def test_was_the_request_sent(exc: httpx.TransportError, dispatch: Dispatch) -> None:
    assert dispatch_of(exc) is dispatch
    for op in WRITES:
        error = error_mapping.for_transport_error(op, exc)
        expected = TransientError if dispatch is Dispatch.NOT_SENT else OutcomeUnknownError
        assert type(error) is expected
        assert error.data["dispatch"] == dispatch.value
    for op in READS:
        assert type(error_mapping.for_transport_error(op, exc)) is TransientError


@pytest.mark.parametrize(
    ("status", "code", "expected"),
    [
        (400, "invalid_request", BusinessRejectedError),
        (402, "card_declined", BusinessRejectedError),
        (404, "no_such_payment", BusinessRejectedError),
        (410, None, BusinessRejectedError),
        (422, "insufficient_stock", BusinessRejectedError),
        (409, "in_progress", ActionInProgressError),
        (409, "idempotency_key_in_use", ActionInProgressError),
        (409, "conflict", ActionConflictError),
        (409, "idempotency_key_reused", ActionConflictError),
        (409, None, ActionConflictError),
        (401, None, TransientError),
        (403, None, TransientError),
        (408, None, TransientError),
        (425, None, TransientError),
        (429, "throttled", TransientError),
        (503, None, TransientError),
        (500, None, OutcomeUnknownError),
        (502, None, OutcomeUnknownError),
        (504, None, OutcomeUnknownError),
        (507, None, OutcomeUnknownError),
        (302, None, OutcomeUnknownError),
    ],
)
def test_status_mapping_for_writes(
    status: int, code: str | None, expected: type[StepSagaError]
) -> None:
    error = error_mapping.for_status(Operation.REFUND, status, body(code), httpx.Headers())
    assert type(error) is expected
    assert error.data["status"] == status
    assert error.data["code"] == code
    assert "Anna" not in error.message  # the body's free text may hold personal data
    assert "Main St" not in str(error.data)


@pytest.mark.parametrize("status", [400, 409, 422, 429, 500, 503])
def test_reads_only_ever_fail_transiently(status: int) -> None:
    for op in READS:
        error = error_mapping.for_status(op, status, body("whatever"), httpx.Headers())
        assert type(error) is TransientError


def test_retry_after_from_body_then_header() -> None:
    in_progress = error_mapping.for_status(
        Operation.REFUND, 409, body("in_progress", retry_after_seconds=3), httpx.Headers()
    )
    assert isinstance(in_progress, ActionInProgressError)
    assert in_progress.retry_after_seconds == 3
    headed = error_mapping.for_status(
        Operation.REFUND, 409, body("in_progress"), httpx.Headers({"Retry-After": "7"})
    )
    assert isinstance(headed, ActionInProgressError)
    assert headed.retry_after_seconds == 7
    default = error_mapping.for_status(Operation.REFUND, 409, body("in_progress"), {})
    assert isinstance(default, ActionInProgressError)
    assert default.retry_after_seconds == error_mapping.DEFAULT_RETRY_AFTER_SECONDS
    throttled = error_mapping.for_status(
        Operation.REFUND, 429, b"", httpx.Headers({"Retry-After": "2"})
    )
    assert throttled.data["retry_after_seconds"] == 2
    for odd in ("Wed, 21 Oct 2026 07:28:00 GMT", "inf", "nan"):
        error = error_mapping.for_status(
            Operation.REFUND, 429, b"", httpx.Headers({"Retry-After": odd})
        )
        assert "retry_after_seconds" not in error.data


@pytest.mark.parametrize("raw", [b"", b"not json", b"[1]", b'{"error": "flat"}', b"\xff"])
def test_unreadable_error_bodies_still_map_by_status(raw: bytes) -> None:
    assert type(error_mapping.for_status(Operation.REFUND, 409, raw, {})) is ActionConflictError
    assert type(error_mapping.for_status(Operation.REFUND, 422, raw, {})) is BusinessRejectedError


def test_an_unreadable_success_is_uncertain_for_writes_and_transient_for_reads() -> None:
    write = error_mapping.for_unreadable_reply(Operation.CREATE_SHIPMENT, 201, "not JSON")
    assert type(write) is OutcomeUnknownError
    read = error_mapping.for_unreadable_reply(Operation.FIND_RESERVATION, 200, "not JSON")
    assert type(read) is TransientError


@pytest.mark.parametrize(
    ("kind", "on_write", "on_read"),
    [
        (FaultKind.THROTTLE, TransientError, TransientError),
        (FaultKind.TIMEOUT_BEFORE_EFFECT, OutcomeUnknownError, TransientError),
        (FaultKind.LOSE_RESPONSE, OutcomeUnknownError, TransientError),
        (FaultKind.REJECT, BusinessRejectedError, None),
        (FaultKind.SLOW, None, None),
        (FaultKind.CRASH_AFTER_EFFECT, None, None),
    ],
)
def test_faults_map_like_the_real_thing(
    kind: FaultKind,
    on_write: type[StepSagaError] | None,
    on_read: type[StepSagaError] | None,
) -> None:
    write = error_mapping.for_fault(Operation.REFUND, kind)
    assert (type(write) if write else None) is on_write
    if write is not None:
        assert write.data["fault"] == kind.value
        assert f"[simulated {kind}]" in write.message
    if kind not in (FaultKind.REJECT, FaultKind.CRASH_AFTER_EFFECT):  # writes only
        read = error_mapping.for_fault(Operation.FIND_REFUND_BY_KEY, kind)
        assert (type(read) if read else None) is on_read


def test_timeout_before_effect_is_indistinguishable_from_a_lost_reply() -> None:
    timeout = error_mapping.for_fault(Operation.REFUND, FaultKind.TIMEOUT_BEFORE_EFFECT)
    lost = error_mapping.for_fault(Operation.REFUND, FaultKind.LOSE_RESPONSE)
    assert timeout is not None
    assert lost is not None
    assert type(timeout) is type(lost)
    assert {k: v for k, v in timeout.data.items() if k != "fault"} == {
        k: v for k, v in lost.data.items() if k != "fault"
    }
