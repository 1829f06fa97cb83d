"""The resolver: the one function that writes operators' decisions on AWS.

Deployed by the construct (``stepsaga.cdk._resolver``) behind a Lambda function URL with
``AuthType AWS_IAM``. Lambda verifies each request's SigV4 signature and puts the signer in
``requestContext.authorizer.iam``; that is the decider (``CallerIdentity.person``, NFKC and
case-folded), never anything in the body. The body is a ``DecisionRequest`` (unknown fields
refused): ``resolve`` (dual control enforced by the ledger's own rule, ``Ledger.resolve``),
``stop``, ``cancel`` (stop, then the saga's compensations and escalations invoked under
this function's role) and ``redrive``. The work is ``AwsBackend``'s own (``resolve_as``,
``stop_as``, ``cancel_as``, ``redrive_as``): the same rules as the CLI's direct path, run
under this function's role, the only role allowed to write reconciliation items and audit
records.

Answers: 200 with ``{"execution_arn": …}`` (what the caller follows with its own reads;
``cancel`` adds ``undone`` and ``superseded_by``), or
the stepsaga error as ``{"error", "type", "message", "data"}`` with 400 (bad input), 403 (no
identity), 404, 409 (refused: dual control, not redrivable) or 503 (retry). Logs carry the
action, the item or execution and the outcome (a cancel's: how many steps were undone),
never the note.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Final

from stepsaga.backends._aws.decisions import DecisionRequest
from stepsaga.backends._aws.operators import CallerIdentity
from stepsaga.backends._views import to_json
from stepsaga.errors import (
    IllegalTransitionError,
    InvalidInputError,
    NotFoundError,
    StepSagaError,
)

if TYPE_CHECKING:
    from stepsaga.backends._aws import AwsBackend

__all__ = ["RESOLVER_HANDLER", "Resolver", "handler", "reset"]

RESOLVER_HANDLER: Final = "stepsaga.lambdas.resolver"

#: The HTTP status of each refusal (the first base class listed that matches).
_STATUS: Final[tuple[tuple[type[StepSagaError], int], ...]] = (
    (InvalidInputError, 400),
    (NotFoundError, 404),
    (IllegalTransitionError, 409),
)


class Resolver:
    """Serves function-URL events with ``backend`` (an ``AwsBackend`` that follows nothing:
    ``wait_seconds=0``), made once by ``make_backend``."""

    def __init__(self, make_backend: Callable[[], AwsBackend]) -> None:
        self._make_backend = make_backend
        self._backend: AwsBackend | None = None

    def handle(self, event: Mapping[str, Any]) -> dict[str, Any]:
        caller = CallerIdentity.of_request(event)
        if caller is None:
            return _answer(403, {"error": "Forbidden", "message": "no signed caller identity"})
        try:
            request = DecisionRequest.parse(_body(event))
            answer = self._decide(caller, request)
        except StepSagaError as exc:
            status = next((code for cls, code in _STATUS if isinstance(exc, cls)), None)
            if status is None:
                status = 409 if not exc.retryable else 503
            _log(action="refused", error=exc.error_name())
            # ``type``: the class itself (``error`` is its routing name, a subclass's base).
            return _answer(status, {**exc.to_dict(), "type": type(exc).__name__})
        logged = {k: v for k, v in answer.items() if k != "undone"}
        if "undone" in answer:
            logged["undone"] = len(answer["undone"])
        _log(action=request.action, **logged)
        return _answer(200, answer)

    def _decide(self, caller: CallerIdentity, request: DecisionRequest) -> dict[str, Any]:
        if request.action == "resolve":
            item_id, outcome = request.given("item_id"), request.given("outcome")
            note = request.given("note")
            view = self._backend_once().resolve_as(caller, item_id, outcome, note)
            execution = view.execution.execution_arn if view.execution is not None else None
            return {"item_id": item_id, "execution_arn": execution}
        ref = request.given("ref")
        if request.action == "stop":
            note = request.given("note")
            stopped = self._backend_once().stop_as(
                ref, tenant=request.tenant, by=caller.person, note=note
            )
            return {"execution_arn": stopped.execution_arn}
        if request.action == "cancel":
            cancelled = self._backend_once().cancel_as(
                ref, tenant=request.tenant, by=caller.person, note=request.given("note")
            )
            return {
                "execution_arn": cancelled.execution.execution_arn,
                "undone": [to_json(u) for u in cancelled.undone],
                "superseded_by": cancelled.superseded_by,
            }
        redriven = self._backend_once().redrive_as(ref, request.tenant)
        return {"execution_arn": redriven["executionArn"]}

    def _backend_once(self) -> AwsBackend:
        if self._backend is None:
            self._backend = self._make_backend()
        return self._backend


def _body(event: Mapping[str, Any]) -> bytes:
    body = event.get("body") or ""
    if event.get("isBase64Encoded"):
        try:
            return base64.b64decode(body, validate=True)
        except ValueError:
            raise InvalidInputError("body: not base64", field="body") from None
    return str(body).encode()


def _answer(status: int, body: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "statusCode": status,
        "headers": {"content-type": "application/json"},
        "body": json.dumps(body, default=str, separators=(",", ":")),
    }


def _log(**fields: object) -> None:
    shown = {k: v for k, v in fields.items() if v is not None}
    print(json.dumps({"resolver": shown}, separators=(",", ":")), flush=True)


def _from_environment() -> AwsBackend:
    from stepsaga._project.deployment import ENV_SAGA
    from stepsaga._project.project import Project
    from stepsaga.backends._aws import AwsBackend
    from stepsaga.backends._aws.settings import settings_from_environment
    from stepsaga.workflow._loader import load_saga

    saga = load_saga(os.environ[ENV_SAGA], ENV_SAGA)
    settings = settings_from_environment(os.environ)
    # The resolver writes itself: never through a resolver URL (that would be itself).
    direct = replace(settings, resolver_url=None)
    return AwsBackend(direct, project=Project.of(saga), wait_seconds=0)


_resolver: Resolver | None = None


def reset() -> None:
    """Forget the resolver the first request built: the next request is a cold start
    (``stepsaga.testing.moto_deployment`` runs every invocation cold)."""
    global _resolver
    _resolver = None


def handler(event: Mapping[str, Any], context: object) -> dict[str, Any]:
    """The resolver function's entry point (a function URL event, payload 2.0)."""
    global _resolver
    if _resolver is None:
        _resolver = Resolver(_from_environment)
    return _resolver.handle(event)
