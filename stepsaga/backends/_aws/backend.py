"""The operator's verbs on the deployed stack: Step Functions for executions, the DynamoDB
ledger for steps and reconciliation items.

* ``start``: the case's other revisions (one ``Query`` of its pointers, a
  ``DescribeExecution`` each) decide whether it may start; its pointer is recorded
  (``pointers.py``), then ``StartExecution`` named after the case; ``ExecutionAlreadyExists``
  (or AWS quietly returning a running one) → ``DescribeExecution``: the same input reports
  that execution, another input is refused naming it.
* ``status``: the execution (``locate.py``: a fixed number of calls, whatever the history)
  + a ``GetItem`` per planned action + the tenant's OPEN items (the ``open-items-by-tenant``
  index).
* ``history``: every ``GetExecutionHistory`` page, oldest first.
* ``list_executions``: ``ListExecutions`` pages, the other filters applied here
  (``listing.py``).
* ``redrive``: ``RedriveExecution`` with a client token derived from the execution and its
  ``redriveCount``, so a repeated call cannot redrive twice; AWS's refusal
  (``ExecutionNotRedrivable``) is passed on with its reason.
* ``recon``: the ledger's own list/get/resolve; a case waiting on the item gets
  ``SendTaskSuccess`` with the ``OperatorDecision``.

AWS runs executions on its own time, so ``start``, ``redrive`` and ``recon resolve`` then
**follow** the execution for at most ``wait_seconds`` (``$STEPSAGA_AWS_WAIT_SECONDS``,
default 60; 0 returns at once): ``DescribeExecution`` every ``poll_seconds`` until it
stops or waits for a decision (RUNNING with an OPEN item carrying a task token), turning
new history events into progress notices. A case still moving after that is reported as
``running``; ``status`` shows it later.

Waiting for a decision is read from the ledger (the reconciler stores the task token on
the item), not from the history, so ``status`` costs no history read.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any, cast

from stepsaga._model.approval_time import check_approval_window
from stepsaga._model.case import ApprovedCase
from stepsaga._model.keys import parse_action_key
from stepsaga._model.person import check_note, check_person
from stepsaga._project.project import Project
from stepsaga._reconciliation import decision_of, resolve, sfn_task_success
from stepsaga._util.clock import Clock, SystemClock
from stepsaga.backends._assemble import (
    CaseIdentity,
    case_open_items,
    case_records,
    execution_view,
    item_view,
    listed_summary,
    recon_list,
    recon_page,
)
from stepsaga.backends._aws.clients import Clients, SessionClients
from stepsaga.backends._aws.decisions import DecisionRequest, ResolverClient
from stepsaga.backends._aws.errors import aws_call
from stepsaga.backends._aws.history import ProgressFeed, all_events, last_event_id
from stepsaga.backends._aws.listing import list_page
from stepsaga.backends._aws.locate import (
    Described,
    case_executions,
    describe,
    describe_or_none,
    locate,
)
from stepsaga.backends._aws.operators import CallerIdentity
from stepsaga.backends._aws.pointers import Pointer, record_pointer
from stepsaga.backends._aws.settings import (
    DEFAULT_POLL_SECONDS,
    DEFAULT_WAIT_SECONDS,
    AwsSettings,
)
from stepsaga.backends._cancel import (
    cancel_cause,
    deployed_functions,
    undo,
    undo_plan,
    undone_view,
)
from stepsaga.backends._lifecycle import (
    MOVING,
    Sibling,
    redrive_refusal,
    refuse_ended,
    settle_stopped,
    start_refusal,
    stop_cause,
    stopped,
    superseding,
)
from stepsaga.backends._listing import ExecutionQuery, PageToken, first_since
from stepsaga.backends._naming import case_of_name, execution_name, tenant_prefix
from stepsaga.backends._progress import ProgressListener
from stepsaga.backends._views import (
    CancelView,
    ExecutionPage,
    ExecutionSummary,
    ExecutionView,
    ReconFilter,
    ReconItemView,
    ReconPage,
    ResolutionView,
    UndoneView,
)
from stepsaga.errors import (
    EXECUTION_STOPPED,
    DecisionNotDeliveredError,
    ExecutionAlreadyExists,
    ExecutionNotRedrivable,
    FunctionFailedError,
    InvalidInputError,
    InvalidToken,
    NotFoundError,
    StepSagaError,
    TaskDoesNotExist,
    TaskTimedOut,
    TransientError,
)
from stepsaga.ledger import Ledger, ReconItem
from stepsaga.ledger._dynamodb import DynamoDBStore
from stepsaga.ledger._models import ReconOutcome, ReconStatus
from stepsaga.workflow import _names as names
from stepsaga.workflow._saga import Saga

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_stepfunctions import SFNClient

    from stepsaga.engine import MockConfig

#: ``DescribeExecution`` statuses of an execution that is still moving.
_MOVING = MOVING
#: The longest ``cause`` StopExecution takes.
_MAX_CAUSE = 32768


def redrive_token(execution_arn: str, redrive_count: int) -> str:
    """``RedriveExecution``'s ``clientToken``: the same for the same execution and redrive
    count, so a repeated call is the same request (AWS keeps tokens for 15 minutes)."""
    return hashlib.sha256(f"{execution_arn}#{redrive_count}".encode()).hexdigest()


class AwsBackend:
    """:class:`~stepsaga.backends._base.SagaBackend` on the deployed stack of one saga of
    ``project`` (``saga``; optional when the project declares one).

    ``settings`` may be a callable, called on first need (so refusing a local-only flag
    makes no AWS call at all). ``clients``, ``clock`` and ``sleeper`` are injectable.
    """

    def __init__(
        self,
        settings: AwsSettings | Callable[[], AwsSettings],
        *,
        project: Project,
        saga: str | None = None,
        clients: Clients | None = None,
        clock: Clock | None = None,
        wait_seconds: float = DEFAULT_WAIT_SECONDS,
        poll_seconds: float = DEFAULT_POLL_SECONDS,
        sleeper: Callable[[float], None] = time.sleep,
    ) -> None:
        self._given_settings = settings
        self._clients: Clients = clients or SessionClients()
        self.project = project
        self._saga_name = saga
        self._saga: Saga | None = None
        self.clock: Clock = clock or SystemClock()
        self.wait_seconds = wait_seconds
        self.poll_seconds = poll_seconds
        self._sleep = sleeper
        self._resolved_settings: AwsSettings | None = None
        self._ledger: Ledger | None = None
        self._resolver_client: ResolverClient | None = None

    @property
    def saga(self) -> Saga:
        """The saga the stack runs (loaded on first need): the declared saga whose name
        ends the stack's state machine name (``{stage}-{saga}``,
        ``deployment.state_machine_name``), whatever the project's default; ``--saga``
        must name that one. A state machine named otherwise falls back to the project's
        rule (``--saga``, the default, or the only saga)."""
        if self._saga is None:
            deployed = self._stack_saga()
            if deployed is not None and self._saga_name not in (None, deployed):
                raise InvalidInputError(
                    f"--saga {self._saga_name}: the stack's state machine "
                    f"{self.settings.state_machine_name} runs saga {deployed}",
                    field="saga",
                )
            self._saga = self.project.saga(deployed or self._saga_name)
        return self._saga

    def _check_saga(self) -> None:
        """Refuse a ``--saga`` the stack does not run before anything is read or sent (a
        stop through the resolver would otherwise stop the case, then exit 2)."""
        _ = self.saga

    def _stack_saga(self) -> str | None:
        machine = self.settings.state_machine_name
        found = [name for name in self.project.saga_names if machine.endswith(f"-{name}")]
        found += [name for name in self.project.saga_names if machine == name]
        return max(found, key=len) if found else None

    # --- lifecycle ---------------------------------------------------------------------

    def close(self) -> None:
        self._ledger = None
        if self._resolver_client is not None:
            self._resolver_client.close()
            self._resolver_client = None
        self._clients.close()

    def __enter__(self) -> AwsBackend:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # --- the verbs ---------------------------------------------------------------------

    def start(
        self,
        case: ApprovedCase,
        *,
        saga: str | None = None,
        faults: object | None = None,
        mock_config: MockConfig | None = None,
        test_case: str | None = None,
        time_scale: float | None = None,
        on_event: ProgressListener | None = None,
    ) -> ExecutionView:
        _refuse_local_only(
            faults=faults, mock_config=mock_config, test_case=test_case, time_scale=time_scale
        )
        if saga is not None and saga != self.saga.name:
            raise InvalidInputError(
                f"--saga {saga}: this stack runs saga {self.saga.name}", field="saga"
            )
        settings, sfn = self.settings, self._sfn()
        name = execution_name(case.tenant_id, case.case_id, case.approval.revision)
        wanted = case.execution_input()
        self.saga.check_input(wanted)
        arn = settings.execution_arn(name)
        retention = self.ledger.policy.retention
        check_approval_window(case.approval.approved_at, self.clock.now(), retention)
        identity = CaseIdentity(case.tenant_id, case.case_id, case.approval.revision)
        found = case_executions(sfn, self._ddb(), settings, identity, previous_by_name=True)
        siblings = [Sibling.of(d) for d in found]
        if all(s.identity.revision != identity.revision for s in siblings):
            # Not a re-start: the other revisions decide whether this one may start.
            refusal = start_refusal(identity, siblings)
            if refusal is not None:
                raise InvalidInputError(refusal, field="approval.revision")
        # Recorded before StartExecution: a crash in between leaves a "not started" pointer.
        pointer = Pointer.of(
            settings.state_machine_arn,
            case.tenant_id,
            case.case_id,
            case.approval.revision,
            at=self.clock.now(),
        )
        record_pointer(self._ddb(), settings.ledger_table_name, pointer)
        try:
            with aws_call("states:StartExecution"):
                started = sfn.start_execution(
                    stateMachineArn=settings.start_target,
                    name=name,
                    input=json.dumps(wanted, sort_keys=True, separators=(",", ":")),
                )
            arn = started["executionArn"]
        except ExecutionAlreadyExists:
            pass  # its input decides below: the same case again, or a conflicting one
        described = describe(sfn, arn)
        if json.loads(described["input"]) != wanted:
            raise ExecutionAlreadyExists(
                f"execution {name} already exists ({described['status']}) for case "
                f"{case.case_id} revision {case.approval.revision} with a different input; "
                f"to change the case, approve revision {case.approval.revision + 1} (it "
                "starts once this one is closed, adopts what this one applied unchanged and "
                "sends every changed effect to a person)",
                field="input",
                execution_arn=arn,
            )
        return self._follow(described, on_event, seen=0)

    def status(self, ref: str, *, tenant: str | None = None) -> ExecutionView:
        return self._view(self._locate(ref, tenant))

    def history(self, ref: str, *, tenant: str | None = None) -> dict[str, Any]:
        self._check_saga()
        sfn = self._sfn()
        described = self._locate(ref, tenant)
        return {"events": all_events(sfn, described["executionArn"])}

    def redrive(
        self,
        ref: str,
        *,
        tenant: str | None = None,
        time_scale: float | None = None,
        on_event: ProgressListener | None = None,
    ) -> ExecutionView:
        """Through the resolver when the stack has one (``decisions.py``), else directly."""
        _refuse_local_only(time_scale=time_scale)
        self._check_saga()
        sfn = self._sfn()
        described = self._locate(ref, tenant)
        resolver = self._resolver()
        if resolver is None:
            self._check_redrivable(described)
        seen = last_event_id(sfn, described["executionArn"]) if on_event is not None else 0
        if resolver is None:
            after = self._redrive_checked(described)
        else:
            answer = resolver.send(DecisionRequest(action="redrive", ref=ref, tenant=tenant))
            after = describe(sfn, str(answer["execution_arn"]))
        return self._follow(after, on_event, seen=seen)

    def redrive_as(self, ref: str, tenant: str | None) -> Described:
        """The resolver's ``redrive``: locate, refuse or ``RedriveExecution``; the
        execution after it."""
        described = self._locate(ref, tenant)
        self._check_redrivable(described)
        return self._redrive_checked(described)

    def _check_redrivable(self, described: Described) -> None:
        refusal = redrive_refusal(described, lambda: self._siblings(described))
        if refusal is not None:
            raise ExecutionNotRedrivable(
                f"execution {described['name']} ({described['status']}) cannot be redriven: "
                f"{refusal}",
                execution_arn=described["executionArn"],
            )

    def _redrive_checked(self, described: Described) -> Described:
        sfn = self._sfn()
        arn = described["executionArn"]
        token = redrive_token(arn, int(described.get("redriveCount", 0)))
        try:
            with aws_call("states:RedriveExecution"):
                sfn.redrive_execution(executionArn=arn, clientToken=token)
        except ExecutionNotRedrivable as exc:
            reason = exc.data.get("service_message") or exc.message
            raise ExecutionNotRedrivable(
                f"execution {described['name']} ({described['status']}) cannot be redriven: "
                f"{reason}",
                execution_arn=arn,
            ) from exc
        return describe(sfn, arn)

    def list_executions(
        self,
        *,
        saga: str | None = None,
        tenant: str | None = None,
        status: str | None = None,
        outcome: str | None = None,
        since: str | datetime | None = None,
        limit: int | None = None,
        next_token: str | None = None,
    ) -> ExecutionPage:
        """``ListExecutions`` of this stack's state machine (``listing.py``)."""
        query = ExecutionQuery.build(
            now=self.clock.now(),
            saga=saga,
            tenant=tenant,
            status=status,
            outcome=outcome,
            since=since,
            limit=limit,
        )
        token = PageToken.decode(next_token, backend="aws", query=query)
        if query.saga is not None and query.saga != self.saga.name:
            raise InvalidInputError(
                f"--saga {query.saga}: this stack runs saga {self.saga.name}", field="saga"
            )
        sfn = self._sfn()

        def summarize(listed: Mapping[str, Any]) -> ExecutionSummary | None:
            name, wanted = str(listed["name"]), query.tenant
            plain = case_of_name(name)
            if wanted is not None and not name.startswith(tenant_prefix(wanted)):
                return None
            identity = CaseIdentity(*plain) if plain is not None else None
            error = None
            if identity is None or listed["status"] in ("FAILED", "ABORTED"):
                described = describe_or_none(sfn, listed["executionArn"])
                if described is None:
                    return None
                try:
                    identity = CaseIdentity.from_input(described["input"])
                except InvalidInputError:
                    return None
                error = described.get("error")
            if wanted is not None and identity.tenant_id != wanted:
                return None
            waiting: tuple[str, ...] = ()
            if listed["status"] == "RUNNING":
                waiting = _waiting_for({"status": "RUNNING"}, self._open_items(identity))
            return listed_summary(
                {**listed, "error": error},
                self.saga.name,
                waiting_for=waiting,
                identity=identity,
            )

        since_date = first_since(query, token)
        return list_page(sfn, self.settings.state_machine_arn, query, token, since_date, summarize)

    def stop(self, ref: str, *, tenant: str | None = None, by: str, note: str) -> ExecutionView:
        """``StopExecution`` with ``Stepsaga.Stopped`` and the cause, then the ledger is
        settled (``lifecycle.settle_stopped``); AWS closes the execution's task tokens.
        Through the resolver when the stack has one: then the stopper is the signer, and
        ``by`` is ignored like ``recon resolve --by``."""
        self._check_saga()
        resolver = self._resolver()
        if resolver is None:
            return self.stop_as(ref, tenant=tenant, by=by, note=note)
        answer = resolver.send(
            DecisionRequest(action="stop", ref=ref, tenant=tenant, note=check_note(note))
        )
        return self._view(describe(self._sfn(), str(answer["execution_arn"])))

    def stop_as(self, ref: str, *, tenant: str | None, by: str, note: str) -> ExecutionView:
        """Stop as ``by`` (the resolver passes the signer; the direct path the flag)."""
        by, note = check_person(by, "--by"), check_note(note)
        described, _ = self._stop_settled(ref, tenant, by, note, stop_cause(by, note), "stop")
        return self._view(described)

    def cancel(self, ref: str, *, tenant: str | None = None, by: str, note: str) -> CancelView:
        """``stop``, then the completed steps undone last first (``cancel_as``). Through the
        resolver when the stack has one: then the canceller is the signer (``by`` is
        ignored, as for ``stop``) and the undo runs under the resolver's role."""
        self._check_saga()
        resolver = self._resolver()
        if resolver is None:
            return self.cancel_as(ref, tenant=tenant, by=by, note=note)
        answer = resolver.send(
            DecisionRequest(action="cancel", ref=ref, tenant=tenant, note=check_note(note))
        )
        later = answer.get("superseded_by")
        return CancelView(
            execution=self._view(describe(self._sfn(), str(answer["execution_arn"]))),
            undone=tuple(UndoneView.model_validate(u) for u in answer.get("undone") or ()),
            superseded_by=later if isinstance(later, str) else None,
        )

    def cancel_as(self, ref: str, *, tenant: str | None, by: str, note: str) -> CancelView:
        """Cancel as ``by`` (the resolver passes the signer; the direct path the flag):
        ``stop``, then the completed steps undone last first (``stepsaga.backends._cancel``)
        by invoking the compensation and reconciler functions the execution's own
        definition names (``DescribeStateMachine`` of its version, so the undo is the
        deployed code that ran the case) with the events the state machine sends."""
        by, note = check_person(by, "--by"), check_note(note)
        reason = cancel_cause(by, note)
        described, case = self._stop_settled(ref, tenant, by, note, reason, "cancel")
        later = superseding(case, self._siblings(described))
        records = case_records(self.ledger, self.saga, case)
        plan = undo_plan(self.saga, case, records, superseded=later is not None)
        functions = self._functions_of(described) if plan else {}
        client = self._clients.lambda_(self.settings.region)

        def invoke(function: str, event: Mapping[str, Any]) -> Mapping[str, Any]:
            arn = functions.get(function)
            if arn is None:
                raise NotFoundError(f"the deployed definition names no function {function}")
            with aws_call("lambda:InvokeFunction"):
                answer = client.invoke(FunctionName=arn, Payload=json.dumps(event).encode())
            payload = json.loads(answer["Payload"].read() or b"null")
            if answer.get("FunctionError"):
                error = payload if isinstance(payload, dict) else {}
                raise FunctionFailedError(
                    f"{error.get('errorType', 'Unhandled')}: {error.get('errorMessage', '')}"
                )
            return cast(Mapping[str, Any], payload)

        done = undo(self.saga, case, plan, invoke, execution_name=described["name"], reason=reason)
        return CancelView(
            execution=self._view(describe(self._sfn(), described["executionArn"])),
            undone=tuple(undone_view(u) for u in done),
            superseded_by=None if later is None else later.name,
        )

    def _stop_settled(
        self, ref: str, tenant: str | None, by: str, note: str, cause: str, verb: str
    ) -> tuple[Described, CaseIdentity]:
        """``stop``'s and ``cancel``'s first half: ``StopExecution`` with ``cause`` (an
        ended execution refused), then the ledger settled."""
        sfn = self._sfn()
        described = self._locate(ref, tenant)
        arn = described["executionArn"]
        self._view(described, [])  # refuses another stack's execution before stopping it
        if not stopped(described):
            refuse_ended(described, verb)
            with aws_call("states:StopExecution"):
                sfn.stop_execution(
                    executionArn=arn, error=EXECUTION_STOPPED, cause=cause[:_MAX_CAUSE]
                )
            described = describe(sfn, arn)
        case = CaseIdentity.from_input(described["input"])
        settle_stopped(self.ledger, self.saga, case, by, note)
        return described, case

    def _functions_of(self, described: Described) -> dict[str, str]:
        """Logical function name → the ARN the execution's definition invokes."""
        machine = str(described.get("stateMachineVersionArn") or described.get("stateMachineArn"))
        with aws_call("states:DescribeStateMachine"):
            definition = json.loads(
                self._sfn().describe_state_machine(stateMachineArn=machine)["definition"]
            )
        return deployed_functions(definition)

    def recon_list(
        self,
        *,
        status: ReconFilter = ReconFilter.OPEN,
        tenant: str | None = None,
        case: str | None = None,
        limit: int | None = None,
    ) -> list[ReconItemView]:
        return recon_list(self.ledger, status=status, tenant=tenant, case=case, limit=limit)

    def recon_page(
        self,
        *,
        status: ReconFilter = ReconFilter.OPEN,
        tenant: str | None = None,
        case: str | None = None,
        limit: int | None = None,
        next_token: str | None = None,
    ) -> ReconPage:
        return recon_page(
            self.ledger, status=status, tenant=tenant, case=case, limit=limit, next_token=next_token
        )

    def recon_show(self, item_id: str) -> ReconItemView:
        item = self.ledger.get_item(item_id)
        if item is None:
            raise NotFoundError(f"no reconciliation item {item_id!r}", item_id=item_id)
        return item_view(item, self.ledger.get_audit(item_id))

    def recon_resolve(
        self,
        item_id: str,
        outcome: ReconOutcome,
        by: str | None,
        note: str,
        *,
        time_scale: float | None = None,
        on_event: ProgressListener | None = None,
    ) -> ResolutionView:
        """Resolve in the ledger as the caller's IAM identity (``by`` is ignored: on AWS
        the decider is who signs the calls, ``stepsaga.backends._aws.operators``), with the
        audit record (the identity's details in it) in the same transaction, then resume
        the waiting case ourselves (not through ``resolve``'s sender) so a wait that
        already ended gets its own clear message. A first approval under dual control
        resumes nothing: the item stays OPEN for a second approver.

        Resolving again the same way sends the decision again: that resumes a case whose
        first ``SendTaskSuccess`` failed, and is a no-op (``TaskTimedOut``) otherwise.
        """
        _refuse_local_only(time_scale=time_scale)
        self._check_saga()
        resolver = self._resolver()
        if resolver is None:
            caller = CallerIdentity.of(self._clients.sts(self.settings.region))
            return self.resolve_as(caller, item_id, outcome, note, by=caller.arn, on_event=on_event)
        seen = 0
        if on_event is not None:  # the progress after the decision, as on the direct path
            before = self.ledger.get_item(item_id)
            waiting = self._execution_of(before) if before is not None else None
            if waiting is not None:
                seen = last_event_id(self._sfn(), waiting["executionArn"])
        answer = resolver.send(
            DecisionRequest(action="resolve", item_id=item_id, outcome=outcome, note=note)
        )
        item = self.ledger.get_item(item_id)
        if item is None:
            raise NotFoundError(f"no reconciliation item {item_id!r}", item_id=item_id)
        if item.status is ReconStatus.OPEN:  # a first approval: the item awaits a second
            return ResolutionView(item=item_view(item), execution=None)
        shown = item_view(item, self.ledger.get_audit(item_id))
        arn = answer.get("execution_arn")
        if not isinstance(arn, str):
            return ResolutionView(item=shown, execution=None)
        execution = self._follow(describe(self._sfn(), arn), on_event, seen)
        return ResolutionView(item=shown, execution=execution)

    def resolve_as(
        self,
        caller: CallerIdentity,
        item_id: str,
        outcome: ReconOutcome,
        note: str,
        *,
        by: str | None = None,
        on_event: ProgressListener | None = None,
    ) -> ResolutionView:
        """Resolve as ``caller`` (``by``, default :attr:`CallerIdentity.person`), the
        identity's details in the audit record; then resume the waiting case."""
        ledger = self.ledger
        resolution = resolve(
            ledger,
            item_id,
            outcome,
            by or caller.person,
            note,
            send_task_success=None,
            identity=caller.details(),
        )
        item = resolution.item
        if resolution.awaiting_second_approver:
            return ResolutionView(item=item_view(item), execution=None)
        audit = ledger.get_audit(item_id)
        stored = item if item.task_token else ledger.get_item(item_id)
        token = stored.task_token if stored is not None else None
        if token is None:
            return ResolutionView(item=item_view(item, audit), execution=None)
        sfn = self._sfn()
        waiting = self._execution_of(item)
        arn = waiting["executionArn"] if waiting is not None else None
        seen = last_event_id(sfn, arn) if on_event is not None and arn is not None else 0
        name = waiting["name"] if waiting is not None else f"of case {item.case_id}"
        self._send_decision(token, item, name, repeat=not resolution.changed)
        if arn is None:
            return ResolutionView(item=item_view(item, audit), execution=None)
        execution = self._follow(describe(sfn, arn), on_event, seen)
        return ResolutionView(item=item_view(item, audit), execution=execution)

    def whoami(self) -> str:
        """The caller's IAM identity: the ARN ``recon_resolve`` records as the decider
        (``operators.CallerIdentity``; an assumed role's ARN names its session)."""
        return CallerIdentity.of(self._clients.sts(self.settings.region)).arn

    # --- configuration and stores --------------------------------------------------------

    @property
    def settings(self) -> AwsSettings:
        if self._resolved_settings is None:
            given = self._given_settings
            self._resolved_settings = given if isinstance(given, AwsSettings) else given()
        return self._resolved_settings

    @property
    def ledger(self) -> Ledger:
        if self._ledger is None:
            settings = self.settings
            client = self._clients.dynamodb(settings.region)
            store = DynamoDBStore(settings.ledger_table_name, client)
            self._ledger = Ledger(store, clock=self.clock)
        return self._ledger

    def _resolver(self) -> ResolverClient | None:
        """The stack's resolver (its function URL), or None: a stack deployed before it,
        whose decisions the CLI still writes itself."""
        url = self.settings.resolver_url
        if url is None:
            return None
        if self._resolver_client is None:
            self._resolver_client = ResolverClient(url, self.settings.region)
        return self._resolver_client

    def _sfn(self) -> SFNClient:
        return self._clients.stepfunctions(self.settings.region)

    def _ddb(self) -> DynamoDBClient:
        return self._clients.dynamodb(self.settings.region)

    def _locate(self, ref: str, tenant: str | None) -> Described:
        return locate(self._sfn(), self._ddb(), self.settings, ref, tenant, now=self.clock.now())

    # --- following an execution --------------------------------------------------------

    def _follow(
        self, described: Described, on_event: ProgressListener | None, seen: int
    ) -> ExecutionView:
        """Poll until the execution stops, waits for a decision, or ``wait_seconds`` pass."""
        sfn, arn = self._sfn(), described["executionArn"]
        feed = ProgressFeed(sfn, arn, on_event, seen) if on_event is not None else None
        case = CaseIdentity.from_input(described["input"])
        waited = 0.0
        while True:
            if feed is not None:
                feed.report()
            items = self._open_items(case)
            moving = described["status"] in _MOVING and not _waiting_for(described, items)
            if not moving or waited >= self.wait_seconds:
                return self._view(described, items)
            self._sleep(self.poll_seconds)
            waited += self.poll_seconds
            described = describe(sfn, arn)

    def _send_decision(self, token: str, item: ReconItem, name: str, *, repeat: bool) -> None:
        decided = item.outcome.value if item.outcome else "?"
        try:
            with aws_call("states:SendTaskSuccess"):
                sfn_task_success(self._sfn())(token, decision_of(item))
        except (TaskTimedOut, TaskDoesNotExist, InvalidToken) as exc:
            if repeat:
                return  # delivered the first time: nothing waits on this token any more
            reason = exc.data.get("service_message") or exc.message
            raise DecisionNotDeliveredError(
                f"item {item.item_id} is resolved as {decided}, but execution {name} no "
                f"longer waits for it ({type(exc).__name__}: {reason}); redrive it "
                f"(stepsaga --backend aws redrive {name}) and it goes on with this decision",
                item_id=item.item_id,
            ) from exc
        except StepSagaError as exc:
            raise TransientError(
                f"item {item.item_id} is resolved as {decided}, but execution {name} could "
                f"not be resumed ({exc.message}); run the same recon resolve again to resume it",
                item_id=item.item_id,
            ) from exc

    # --- views ---------------------------------------------------------------------------

    def _siblings(self, described: Described) -> list[Sibling]:
        case = CaseIdentity.from_input(described["input"])
        found = case_executions(self._sfn(), self._ddb(), self.settings, case)
        return [Sibling.of(other) for other in found]

    def _execution_of(self, item: ReconItem) -> Described | None:
        """The execution of the item's case: the revision is part of its action key
        (``{tenant}:{case}:r{revision}:…``, docs/contributing/internals.md), so an item whose
        action was
        never recorded finds its case too."""
        key = parse_action_key(item.record_key)
        if key is None or (key.tenant, key.case) != (item.tenant_id, item.case_id):
            return None
        name = execution_name(item.tenant_id, item.case_id, key.revision)
        return describe_or_none(self._sfn(), self.settings.execution_arn(name))

    def _open_items(self, case: CaseIdentity) -> list[ReconItem]:
        return case_open_items(self.ledger, case)

    def _view(self, described: Described, items: list[ReconItem] | None = None) -> ExecutionView:
        machine = str(described.get("stateMachineArn", ""))
        if machine and machine != self.settings.state_machine_arn:
            raise InvalidInputError(
                f"execution {described['name']} belongs to state machine {machine}, not to "
                f"this stack's saga {self.saga.name}",
                field="saga",
            )
        case = CaseIdentity.from_input(described["input"])
        open_items = self._open_items(case) if items is None else items
        return execution_view(
            described,
            saga=self.saga,
            records=case_records(self.ledger, self.saga, case),
            waiting_for=_waiting_for(described, open_items),
            open_items=tuple(item.item_id for item in open_items),
        )


def _waiting_for(described: Described, open_items: list[ReconItem]) -> tuple[str, ...]:
    """The ``AwaitDecision…`` states a RUNNING execution waits in: its case's OPEN items
    that carry a task token (the reconciler stores it when the wait begins)."""
    if described["status"] != "RUNNING":
        return ()
    states = (names.await_decision(item.step) for item in open_items if item.task_token)
    return tuple(dict.fromkeys(states))


_LOCAL_ONLY = {
    "faults": "--faults drives the simulated services of the local backend; AWS calls the "
    "deployed ones",
    "mock_config": "--mock-config mocks tasks on the local backend; AWS runs the deployed handlers",
    "test_case": "--test-case goes with --mock-config, which works on the local backend only",
    "time_scale": "--time-scale scales the local engine's waits; AWS waits in real time",
}


def _refuse_local_only(**flags: object) -> None:
    """Flags AWS cannot honour: refused before any AWS call, naming the flag."""
    for flag, value in flags.items():
        if value is not None:
            raise InvalidInputError(_LOCAL_ONLY[flag], field=flag)
