"""The reference app's synthesized stack on moto, end to end: ``stepsaga --backend aws
--stack …`` starts the case, moto's Step Functions interpreter runs the deployed definition,
and every ``lambda:invoke`` runs the real bundled handler (the template's ``Handler`` and
environment) in-process, against the ledger on moto's DynamoDB and the simulated services
with faults (``stepsaga.testing._moto_stack``).

Outcomes are asserted from what the services applied (their own effects table), the ledger
(DynamoDB on moto) and ``DescribeExecution``/``status`` — not state names, which the
compiler may change.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import boto3
import pytest
from typer.testing import CliRunner

from services import load_faults, open_simulation
from stepsaga._project.home import StateHome
from stepsaga._reconciliation import AUTO_RESOLVER
from stepsaga.cli._app import app
from stepsaga.errors import TransientError
from stepsaga.ledger import Ledger, Status
from stepsaga.ledger._dynamodb import DynamoDBStore
from stepsaga.ledger._models import ReconStatus
from stepsaga.testing import moto_deployment
from stepsaga.testing._moto_stack import FunctionCall, MotoDeployment
from stepsaga.testing.pytest_plugin import under_ci
from tasks.refund_payment import RefundPayment
from tests.framework.functional.cli_support import (
    EXAMPLES,
    Result,
    effects,
    write_case,
    write_faults,
)

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
os.environ.setdefault("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")
os.environ.setdefault("JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION", "1")

runner = CliRunner()
CASE = "CASE-1001"
#: The synth requires the services' URLs; the functions here call the simulated services.
UNUSED_SERVICE_URLS = {
    f"{service}_url": f"https://{service}.example.com"
    for service in ("inventory", "payments", "shipping")
}
#: The step functions the saga deploys (``STEPSAGA_FUNCTION``).
STEPS = ("ReserveStock", "RefundPayment", "CreateShipment")


def synthesize(
    tmp_path_factory: pytest.TempPathFactory, saga: str | None = None
) -> tuple[str, dict[str, Any]]:
    """The reference app's stack (of ``saga``, by default the app's own), synthesized:
    its name and template (15-20 s; call it from a module-scoped fixture)."""
    if shutil.which("node") is None:
        reason = "needs Node.js (the CDK synth runs on jsii)"
        if under_ci():
            pytest.fail(f"CI=true {reason}", pytrace=False)
        pytest.skip(reason)
    from aws_cdk import App
    from aws_cdk.assertions import Template

    from infra.app import SAGA, build

    outdir = tmp_path_factory.mktemp("cdk.out")
    app = App(context={"bundling": "sources", **UNUSED_SERVICE_URLS}, outdir=str(outdir))
    stack = build(app, saga=saga or SAGA)
    return stack.stack_name, dict(Template.from_stack(stack).to_json())


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, Any]]:
    return synthesize(tmp_path_factory)


@pytest.fixture
def deployed(synthesized: tuple[str, dict[str, Any]], home: StateHome) -> Iterator[MotoDeployment]:
    stack_name, template = synthesized
    # As deployed, except that the functions call the simulated services under ``home``.
    services = {"STEPSAGA_SERVICES": "simulated", "STEPSAGA_HOME": str(home.root)}
    with moto_deployment(template, stack_name=stack_name, environment=services) as deployment:
        yield deployment


def aws(deployment: MotoDeployment, *args: str, as_: Mapping[str, str] | None = None) -> Result:
    """``stepsaga --backend aws --stack <the stack> ARGS`` (the stack's outputs on moto),
    with the credentials ``as_`` (``AWS_ACCESS_KEY_ID`` …) if given."""
    env = {"AWS_REGION": deployment.region, "STEPSAGA_AWS_WAIT_SECONDS": "0", **(as_ or {})}
    result = runner.invoke(
        app, ["--backend", "aws", "--stack", deployment.stack_name, *args], env=env
    )
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return Result(result.exit_code, result.stdout, result.stderr)


def start(deployment: MotoDeployment, home: StateHome, tmp_path: Path, faults: Path | None) -> str:
    """Attach ``faults`` (a faults file) to the case, start it; its execution ARN."""
    if faults is not None:
        open_simulation(home).attach_faults("acme", CASE, load_faults(faults))
    started = aws(deployment, "start", str(write_case(tmp_path, CASE)), "--json")
    assert started.code == 0, started.err
    return str(started.json()["executionArn"])


def ledger(deployment: MotoDeployment) -> Ledger:
    (table,) = deployment.tables.values()
    return Ledger(DynamoDBStore(table, boto3.client("dynamodb", region_name=deployment.region)))


def records(deployment: MotoDeployment) -> dict[str, Status]:
    """Ledger record → status, by operation (the last part of the action key)."""
    return {r.key.rsplit(":", 1)[-1]: r.status for r in ledger(deployment).list()}


def errors_raised(deployment: MotoDeployment, function: str) -> list[str | None]:
    return [call.error for call in deployment.calls(function)]


def task_failures(execution_arn: str) -> list[tuple[str, str]]:
    """(error, cause's errorType) of every TaskFailed event, as the interpreter saw them."""
    client = boto3.client("stepfunctions", region_name="us-east-1")
    events = client.get_execution_history(executionArn=execution_arn, maxResults=1000)["events"]
    failed = [e["taskFailedEventDetails"] for e in events if e["type"] == "TaskFailed"]
    return [(f["error"], json.loads(f["cause"])["errorType"]) for f in failed]


def test_the_deployed_functions_run_the_bundled_entry_point(deployed: MotoDeployment) -> None:
    for step in STEPS:
        function = deployed.function(step)
        assert function.handler == "stepsaga.lambdas.step"
        assert function.environment["STEPSAGA_SAGA"] == "workflows.replacement_order:saga"
        assert function.environment["STEPSAGA_LEDGER_TABLE_NAME"] in deployed.tables.values()


def test_happy_path_completes_with_each_effect_once(
    deployed: MotoDeployment, home: StateHome, tmp_path: Path
) -> None:
    arn = start(deployed, home, tmp_path, None)

    done = deployed.wait(arn)

    assert done["status"] == "SUCCEEDED"
    status = aws(deployed, "status", CASE, "--json")
    assert status.code == 0, status.err
    assert status.json()["outcome"] == "completed"
    assert effects(home, CASE) == {"reserve": 1, "refund": 1, "create_shipment": 1}
    assert records(deployed) == {
        "reserve_stock": Status.COMPLETED,
        "refund_payment": Status.COMPLETED,
        "create_shipment": Status.COMPLETED,
    }
    assert all(errors_raised(deployed, step) == [None] for step in STEPS)
    assert ledger(deployed).list_items() == []


def test_rejected_shipment_is_compensated_and_the_refund_escalated(
    deployed: MotoDeployment, home: StateHome, tmp_path: Path
) -> None:
    arn = start(deployed, home, tmp_path, EXAMPLES / "faults-shipment-rejected.json")

    done = deployed.wait(arn)

    assert (done["status"], done["error"]) == ("FAILED", "Saga.Compensated")
    assert aws(deployed, "status", CASE, "--json").json()["outcome"] == "compensated"
    # The handler's exception reached the interpreter as a Lambda function error whose
    # errorType is the class name, which the Catch matched.
    assert errors_raised(deployed, "CreateShipment") == ["BusinessRejectedError"]
    assert ("BusinessRejectedError", "BusinessRejectedError") in task_failures(arn)
    assert effects(home, CASE) == {"reserve": 1, "release": 1, "refund": 1}
    assert records(deployed)["reserve_stock"] == Status.COMPLETED
    assert records(deployed)["release_reservation"] == Status.COMPLETED
    assert records(deployed)["create_shipment"] == Status.FAILED
    (item,) = ledger(deployed).list_items(status=ReconStatus.OPEN)
    assert item.reason == "escalated: refund issued, replacement not shipped"


def test_lost_refund_reply_is_reconciled_automatically_and_the_case_completes(
    deployed: MotoDeployment, home: StateHome, tmp_path: Path
) -> None:
    # Every refund reply lost: the handler's second call with the same key loses it too,
    # so the step ends OutcomeUnknownError and the reconciler finds the refund by its key.
    lost = write_faults(
        tmp_path, {"service": "payments", "operation": "refund", "fault": "lose_response"}
    )
    arn = start(deployed, home, tmp_path, lost)

    done = deployed.wait(arn)

    assert done["status"] == "SUCCEEDED"
    # Unknown, reconciled as applied, then the step again: it replays the ledger's record.
    assert errors_raised(deployed, "RefundPayment") == ["OutcomeUnknownError", None]
    assert [call.error for call in deployed.calls("Reconcile")] == [None]
    assert effects(home, CASE) == {"reserve": 1, "refund": 1, "create_shipment": 1}
    assert records(deployed)["refund_payment"] == Status.COMPLETED
    (item,) = ledger(deployed).list_items()
    assert (item.status, item.resolved_by) == (ReconStatus.RESOLVED, AUTO_RESOLVER)


def test_undecidable_shipment_waits_for_a_person_and_recon_resolve_completes_it(
    deployed: MotoDeployment, home: StateHome, tmp_path: Path
) -> None:
    arn = start(deployed, home, tmp_path, EXAMPLES / "faults-shipment-unverifiable.json")

    def waiting(_: Any) -> bool:
        return any(i.task_token for i in ledger(deployed).list_items(status=ReconStatus.OPEN))

    assert deployed.wait(arn, until=waiting)["status"] == "RUNNING"
    assert aws(deployed, "status", CASE, "--json").json()["outcome"] == "awaiting_reconciliation"
    (item,) = ledger(deployed).list_items(status=ReconStatus.OPEN)

    resolved = aws(
        deployed,
        *("recon", "resolve", item.item_id, "--outcome", "applied", "--note", "label seen"),
    )
    assert resolved.code == 0, resolved.err
    done = deployed.wait(arn)

    assert done["status"] == "SUCCEEDED"
    assert effects(home, CASE) == {"reserve": 1, "refund": 1, "create_shipment": 1}
    assert records(deployed)["create_shipment"] == Status.COMPLETED
    (after,) = ledger(deployed).list_items()
    assert after.status == ReconStatus.RESOLVED
    # Resolved by the stack's resolver as the signer (moto's STS names the default key's
    # user), the caller's ARN in the audit record.
    assert after.resolved_by == "moto"
    audit = ledger(deployed).get_audit(after.item_id)
    assert audit is not None
    assert audit.identity["caller_arn"] == "arn:aws:sts::123456789012:user/moto"
    assert [
        c.event["requestContext"]["authorizer"]["iam"]["userArn"] for c in resolver_calls(deployed)
    ] == ["arn:aws:sts::123456789012:user/moto"]


def operator_session(region: str, session: str) -> dict[str, str]:
    """Credentials of ``session`` on an assumed operator role (moto's STS issues them)."""
    iam = boto3.client("iam", region_name=region)
    trust = {"Statement": [{"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "*"}]}
    role = iam.create_role(RoleName="stepsaga-operator", AssumeRolePolicyDocument=json.dumps(trust))
    sts = boto3.client("sts", region_name=region)
    issued = sts.assume_role(RoleArn=role["Role"]["Arn"], RoleSessionName=session)
    return {
        "AWS_ACCESS_KEY_ID": issued["Credentials"]["AccessKeyId"],
        "AWS_SECRET_ACCESS_KEY": issued["Credentials"]["SecretAccessKey"],
        "AWS_SESSION_TOKEN": issued["Credentials"]["SessionToken"],
    }


def resolver_calls(deployment: MotoDeployment) -> list[FunctionCall]:
    """The requests the stack's resolver served (through its function URL)."""
    (resolver,) = deployment.urls.values()
    return [call for call in deployment.invocations if call.function == resolver]


def printed_json(out: str) -> Any:
    """The CLI's ``--json`` document after the in-process functions' log lines (here they
    share the CLI's stdout; on Lambda they go to CloudWatch)."""
    return json.loads(out[out.rindex("\n{\n") + 1 :] if not out.startswith("{\n") else out)


def test_cancel_stops_the_case_and_undoes_it_with_the_deployed_compensations(
    deployed: MotoDeployment, home: StateHome, tmp_path: Path
) -> None:
    """``cancel`` on AWS is a request to the stack's resolver, signed by the operator (an
    assumed role's session): the resolver stops the execution, then the release runs in
    the deployed ReleaseReservation function and the refund's escalation in the
    reconciler, invoked by the resolver with the events the state machine sends, the
    signer as canceller (``--by`` is ignored); the uncertain shipment keeps its item."""
    arn = start(deployed, home, tmp_path, EXAMPLES / "faults-shipment-unverifiable.json")

    def waiting(_: Any) -> bool:
        return any(i.task_token for i in ledger(deployed).list_items(status=ReconStatus.OPEN))

    assert deployed.wait(arn, until=waiting)["status"] == "RUNNING"
    who = ("--by", "ops@acme.example", "--note", "customer cancelled")
    alice = operator_session(deployed.region, "Alice")

    cancelled = aws(deployed, "cancel", "--case", CASE, *who, "--json", as_=alice)

    assert cancelled.code == 0, cancelled.err
    (request,) = resolver_calls(deployed)
    signer = request.event["requestContext"]["authorizer"]["iam"]["userArn"]
    assert signer.endswith(":assumed-role/stepsaga-operator/Alice")
    assert json.loads(request.event["body"]) == {
        "action": "cancel",
        "ref": CASE,
        "note": "customer cancelled",
    }
    (release,) = deployed.calls("ReleaseReservation")
    assert release.event["failure"] == {
        "Error": "Stepsaga.Cancelled",
        "Cause": "cancelled by alice: customer cancelled",
    }
    view = printed_json(cancelled.out)
    # (moto's interpreter neither ends a task-token wait on StopExecution nor keeps its
    # error and cause, so the execution's own status is not asserted here; the stubbed
    # tests check the StopExecution call, the ledger below shows what cancel did.)
    assert [(u["step"], u["kind"]) for u in view["undone"]] == [
        ("RefundPayment", "escalated"),
        ("ReserveStock", "compensated"),
    ]
    assert [call.error for call in deployed.calls("ReleaseReservation")] == [None]
    # The shipment's reply was lost (applied, unverifiable): its item says so to a person.
    applied = {"reserve": 1, "refund": 1, "create_shipment": 1, "release": 1}
    assert effects(home, CASE) == applied
    assert records(deployed)["release_reservation"] == Status.COMPLETED
    steps = {i.step for i in ledger(deployed).list_items(status=ReconStatus.OPEN)}
    assert steps == {"CreateShipment", "RefundPayment"}

    again = aws(deployed, "cancel", CASE, *who, "--json")  # replays by key
    assert again.code == 0, again.err
    assert effects(home, CASE) == applied
    assert len(ledger(deployed).list_items(status=ReconStatus.OPEN)) == 2

    ended = aws(deployed, "start", str(write_case(tmp_path, "CASE-1002")), "--json")
    assert ended.code == 0, ended.err
    deployed.wait(ended.json()["executionArn"])
    refused = aws(deployed, "cancel", "--case", "CASE-1002", *who)
    assert refused.code == 2
    assert "there is nothing to cancel" in refused.err


def test_with_two_sagas_and_no_default_every_verb_finds_the_stacks_saga(
    deployed: MotoDeployment, home: StateHome, tmp_path: Path
) -> None:
    """A project declaring two sagas and no default: the stack's state machine
    (``dev-replacement-order``) names the saga, so no verb asks for ``--saga``, and a
    ``recon resolve`` that resumed the case exits 0."""
    project = tmp_path / "two-sagas"
    project.mkdir()
    (project / "pyproject.toml").write_text(
        "[tool.stepsaga]\n"
        'dependencies = "services.dependencies:dependencies"\n'
        "[tool.stepsaga.sagas]\n"
        'replacement-order = "workflows.replacement_order:saga"\n'
        'multi-warehouse-replacement = "workflows.multi_warehouse:saga"\n'
    )

    def verb(*args: str) -> Result:
        return aws(deployed, "--project", str(project), *args)

    unverifiable = EXAMPLES / "faults-shipment-unverifiable.json"
    open_simulation(home).attach_faults("acme", CASE, load_faults(unverifiable))
    started = verb("start", "--saga", "replacement-order", str(write_case(tmp_path)), "--json")
    assert started.code == 0, started.err
    arn = started.json()["executionArn"]

    def waiting(_: Any) -> bool:
        return any(i.task_token for i in ledger(deployed).list_items(status=ReconStatus.OPEN))

    deployed.wait(arn, until=waiting)
    status = verb("status", CASE, "--json")
    assert status.code == 0, status.err
    assert status.json()["saga"] == "replacement-order"
    assert verb("list", "--json").code == 0
    graph = verb("graph", "--execution", CASE)
    assert graph.code == 0, graph.err
    assert verb("redrive", "--all-failed", "--json").code == 0
    history = verb("history", CASE, "--json")
    assert history.code == 0, history.err
    assert any(e["type"] == "TaskFailed" for e in printed_json(history.out)["events"])
    who = ("--by", "ops@acme.example", "--note", "customer cancelled")
    other = ("--saga", "multi-warehouse-replacement")
    (item,) = ledger(deployed).list_items(status=ReconStatus.OPEN)
    decision = ("--outcome", "applied", "--note", "seen")
    for wrong in (
        verb("status", CASE, *other),
        verb("history", CASE, *other),
        verb("redrive", CASE, *other),
        verb("stop", "--case", CASE, *who, *other),
        verb("cancel", "--case", CASE, *who, *other),
        verb("recon", "resolve", item.item_id, *decision, *other),
    ):
        assert wrong.code == 2, wrong.err
        assert "runs saga replacement-order" in wrong.err
    # The refused redrive, stop, cancel and resolve sent nothing: the case still waits.
    assert deployed.wait(arn, until=lambda _: True)["status"] == "RUNNING"
    assert status_of(verb, CASE) not in ("stopped", "cancelled")
    assert resolver_calls(deployed) == []
    assert "release" not in effects(home, CASE)
    resolved = verb("recon", "resolve", item.item_id, *decision)
    assert resolved.code == 0, resolved.err
    assert deployed.wait(arn)["status"] == "SUCCEEDED"

    second = "CASE-1002"
    open_simulation(home).attach_faults("acme", second, load_faults(unverifiable))
    started = verb("start", "--saga", "replacement-order", str(write_case(tmp_path, second)))
    assert started.code == 0, started.err
    deployed.wait(f"{arn.rsplit(':', 1)[0]}:acme-{second}-r1", until=waiting)
    stopped = verb("stop", "--case", second, *who, "--json")
    assert stopped.code == 0, stopped.err
    # (moto's interpreter does not end a task-token wait on StopExecution, so the stop is
    # asserted by the one request the stack's resolver served, as in the cancel test.)
    (request,) = resolver_calls(deployed)[1:]
    assert json.loads(request.event["body"]) == {
        "action": "stop",
        "ref": second,
        "note": "customer cancelled",
    }
    assert request.error is None


def status_of(verb: Callable[..., Result], case: str) -> str:
    """The case's outcome as ``status --json`` prints it (no ``--saga``)."""
    status = verb("status", case, "--json")
    assert status.code == 0, status.err
    return str(status.json()["outcome"])


def test_a_throttled_refund_is_retried_by_the_state_machine_and_refunded_once(
    deployed: MotoDeployment, home: StateHome, tmp_path: Path
) -> None:
    arn = start(deployed, home, tmp_path, EXAMPLES / "faults-throttled-refund.json")

    done = deployed.wait(arn)

    assert done["status"] == "SUCCEEDED"
    # The definition's Retry matched the handler's error name; moto skipped the delays.
    assert errors_raised(deployed, "RefundPayment") == [TransientError.__name__] * 2 + [None]
    assert effects(home, CASE) == {"reserve": 1, "refund": 1, "create_shipment": 1}
    assert records(deployed)["refund_payment"] == Status.COMPLETED


BUG = "refund request not built: bug in our client code"


def buggy_perform(self: RefundPayment, services: Any, call: Any) -> Any:
    raise RuntimeError(BUG)


def test_a_bug_in_a_deployed_handler_keeps_its_message_in_the_history_and_the_evidence(
    deployed: MotoDeployment, home: StateHome, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug (an unexpected exception) in the deployed RefundPayment function: the
    Lambda error's cause in the execution history and the reconciliation item's evidence
    keep its type, message and raising frame, as on the embedded backend
    (``test_error_messages.py``)."""
    monkeypatch.setattr(RefundPayment, "perform", buggy_perform)
    # The payments lookup is throttled, so the first attempt's item waits for a person.
    unverifiable = write_faults(
        tmp_path, {"service": "payments", "operation": "find_refund_by_key", "fault": "throttle"}
    )
    arn = start(deployed, home, tmp_path, unverifiable)

    def waiting(_: Any) -> bool:
        return any(i.task_token for i in ledger(deployed).list_items(status=ReconStatus.OPEN))

    deployed.wait(arn, until=waiting)

    frame = f"test_moto_end_to_end.py:{buggy_perform.__code__.co_firstlineno + 1} in buggy_perform"
    said = f"RuntimeError: {BUG} (at tests/framework/functional/{frame})"
    # The bug may have left an effect behind: the ledger routes it as an unknown outcome.
    assert errors_raised(deployed, "RefundPayment") == ["OutcomeUnknownError"]
    client = boto3.client("stepfunctions", region_name=deployed.region)
    events = client.get_execution_history(executionArn=arn, maxResults=1000)["events"]
    causes = [e["taskFailedEventDetails"] for e in events if e["type"] == "TaskFailed"]
    assert causes
    assert all(said in json.loads(c["cause"])["errorMessage"] for c in causes)
    items = ledger(deployed).list_items()
    assert items
    assert all(said in item.evidence["last_error"]["message"] for item in items)
    assert "refund" not in effects(home, CASE)
