"""The console's pages: a Starlette app over the same backend the CLI opens.

Every page calls the ``SagaBackend`` verbs (``status``, ``history``, ``redrive``,
``recon_list``/``show``/``resolve``, ``whoami``) and the ledger ``stepsaga ledger`` reads;
nothing here runs, decides or stores anything itself. A backend is opened per request and
closed after it (in the request's own worker thread: pages are plain functions Starlette runs
in its thread pool), so a page always shows what the stores say now and a slow page holds up
no other. Actions (redrive, stop, cancel, resolve) go to the
:class:`~stepsaga.console._actions.ActionWorker` and the POST returns at once; pages refresh
themselves (``static/console.js``) while something moves.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import quote, urlencode

import anyio
from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from stepsaga._project.project import Project
from stepsaga._reconciliation.overdue import is_overdue
from stepsaga._util.clock import Clock, SystemClock
from stepsaga.backends import CaseOutcome, ExecutionView, ReconFilter, SagaBackend
from stepsaga.backends._base import SupportsCount, SupportsRetryDelays, SupportsValueSearch
from stepsaga.backends._lifecycle import stopped
from stepsaga.backends._progress import entered_states
from stepsaga.backends._views import StepView
from stepsaga.console._actions import ActionRequest, ActionWorker, Job, JobState
from stepsaga.console._fold import Folded, fold
from stepsaga.console._layout import layout
from stepsaga.console._security import (
    CSRF_FIELD,
    OPERATOR_SCOPE_KEY,
    ForbiddenError,
    TokenGate,
    check_csrf,
    csrf_token,
)
from stepsaga.console._steps import StepRun, case_input, state_statuses, step_runs
from stepsaga.console._timeline import short_cause, timeline
from stepsaga.console._wording import web_wording
from stepsaga.engine._models import ExecutionStatus
from stepsaga.errors import (
    IllegalTransitionError,
    InvalidInputError,
    NotFoundError,
    StepSagaError,
)
from stepsaga.ledger import Ledger, Record
from stepsaga.workflow._graph import StateGraph, Visited, build_graph

#: Statuses an execution can be redriven from (AWS's rule; the backend has the last word).
REDRIVABLE = frozenset({"FAILED", "ABORTED", "TIMED_OUT"})
DEFAULT_OVERDUE_AFTER = timedelta(hours=24)
LEDGER_LIMIT = 500
#: The tenant fields' choices: tenants of this many newest executions, looked up again after.
TENANTS_LOOKED_AT = 200
TENANTS_KEPT = timedelta(minutes=1)
#: Executions a search by a case input's value lists at most (newest first).
SEARCH_SHOWN = 50
#: The executions list's filters (``list_executions``' keyword arguments).
_LIST_FILTERS = ("saga", "tenant", "status", "outcome", "since")


@dataclass(frozen=True)
class ConsoleConfig:
    """What the console serves. ``open_backend``/``open_ledger`` are the CLI's own openers
    (``stepsaga.cli._backend.open_backend``, ``stepsaga.cli._ledger.ledger_of``)."""

    project: Project
    open_backend: Callable[[], SagaBackend]
    open_ledger: Callable[[], Ledger | None]
    token: str
    port: int
    #: ``local`` or ``aws``: shown in the header.
    backend_name: str = "local"
    #: Hosts the browser may name (DNS rebinding defence).
    allowed_hosts: tuple[str, ...] = ("127.0.0.1", "localhost")
    #: Age at which an OPEN item is marked overdue (the stack's alarm default: 24 h).
    overdue_after: timedelta = DEFAULT_OVERDUE_AFTER
    #: Executions per page of the list.
    page_size: int = 25
    clock: Clock = field(default_factory=SystemClock)
    #: ``{SHA-256 of a personal token: who}`` (``--operators-file``, local backend): a
    #: request signed by one acts as that person; the console's own token as ``whoami``.
    operators: Mapping[str, str] = field(default_factory=dict)
    #: How long a POST waits for its action before returning to the page (which then shows
    #: the action's progress): enough for a refusal to come back onto the form it came from.
    action_wait: float = 0.3


def _environment(clock: Clock) -> Environment:
    env = Environment(
        loader=PackageLoader("stepsaga.console", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["when"] = _when
    env.filters["iso"] = lambda value: value.isoformat() if isinstance(value, datetime) else ""
    env.filters["ago"] = lambda value: _ago(value, clock.now())
    env.filters["ms"] = lambda value: "" if value is None else f"{value:,.0f} ms"
    env.filters["pretty"] = lambda value: json.dumps(value, indent=2, sort_keys=True, default=str)
    env.filters["short"] = short_cause
    return env


def _when(value: datetime | str | None) -> str:
    """Times to the millisecond, in UTC (the history's events are milliseconds apart)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if value.tzinfo is None:
        return value.isoformat(timespec="milliseconds")
    return value.strftime("%Y-%m-%d %H:%M:%S.") + f"{value.microsecond // 1000:03d} UTC"


def _ago(value: datetime | None, now: datetime) -> str:
    if not isinstance(value, datetime):
        return ""
    seconds = (now - value).total_seconds()
    return "just now" if seconds < 1 else f"{age_text(seconds)} ago"


def age_text(seconds: float) -> str:
    """``3d 4h``, ``2h 5m``, ``4m``, ``12s``: how long ago, or how long an item waited."""
    minutes = int(seconds // 60)
    days, hours, mins = minutes // 1440, minutes // 60 % 24, minutes % 60
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {mins}m"
    if mins:
        return f"{mins}m"
    return f"{int(seconds)}s"


#: Our errors as HTTP statuses: bad input 400, not found 404, a refused change 409.
_STATUS_OF: tuple[tuple[type[Exception], int], ...] = (
    (ForbiddenError, 403),
    (NotFoundError, 404),
    (InvalidInputError, 400),
    (IllegalTransitionError, 409),
)


def status_code(exc: Exception) -> int:
    return next((code for kind, code in _STATUS_OF if isinstance(exc, kind)), 500)


def error_text(exc: Exception) -> str:
    """The one-line message a person reads, in the web's words (no CLI flags)."""
    message = exc.message if isinstance(exc, StepSagaError) else f"{type(exc).__name__}: {exc}"
    return web_wording(message)


#: The queue's kinds of item (``kind=`` filter), each with the rule that picks it.
QUEUE_KINDS: dict[str, Callable[[Any], bool]] = {
    "waits": lambda item: item.waiting and not item.awaiting_second_approver,
    "escalations": lambda item: not item.waiting,
    "dual": lambda item: item.awaiting_second_approver,
}


class Console:
    """The pages (one method each) and the app that routes to them."""

    def __init__(self, config: ConsoleConfig) -> None:
        self.config = config
        self.env = _environment(config.clock)
        self._graphs: dict[str, tuple[StateGraph, Folded]] = {}
        self.worker = ActionWorker(config.open_backend, config.clock, status_code)
        self._tenants: tuple[datetime, list[str]] | None = None

    # --- plumbing --------------------------------------------------------------------------

    def app(self) -> Starlette:
        c = self.config
        routes = [
            Route("/", lambda request: RedirectResponse("/executions", 303)),
            Route("/executions", self.executions),
            Route("/executions/{name}", self.execution),
            Route("/executions/{name}/redrive", self.redrive, methods=["POST"]),
            Route("/executions/{name}/stop", self.stop, methods=["POST"]),
            Route("/executions/{name}/cancel", self.cancel, methods=["POST"]),
            Route("/reconciliation", self.queue),
            Route("/reconciliation/{item_id}", self.item),
            Route("/reconciliation/{item_id}/resolve", self.resolve, methods=["POST"]),
            Route("/ledger", self.ledger),
            Route("/search", self.search),
            Mount("/static", StaticFiles(packages=[("stepsaga.console", "static")]), name="static"),
        ]
        middleware = [
            Middleware(TrustedHostMiddleware, allowed_hosts=list(c.allowed_hosts)),
            Middleware(TokenGate, token=c.token, port=c.port, operators=c.operators),
        ]
        return Starlette(routes=routes, middleware=middleware)

    def page(self, template: str, status_code: int = 200, **values: Any) -> HTMLResponse:
        values.setdefault("csrf", csrf_token(self.config.token))
        values.setdefault("csrf_field", CSRF_FIELD)
        values.setdefault("backend_name", self.config.backend_name)
        values.setdefault("project_sagas", self.config.project.saga_names)
        values.setdefault("working", self.worker.active())
        text = self.env.get_template(template).render(**values)
        return HTMLResponse(text, status_code=status_code)

    @contextmanager
    def backend(self) -> Iterator[SagaBackend]:
        with self.config.open_backend() as backend:
            yield backend

    def refused(self, exc: Exception) -> Response:
        """Our errors as a page with the status of :data:`_STATUS_OF`."""
        code = status_code(exc)
        return self.page("error.html", status_code=code, message=error_text(exc), code=code)

    def known_tenants(self, backend: SagaBackend) -> list[str]:
        """Tenants of the newest executions (one ``list_executions`` page, kept a minute):
        what the tenant fields offer and match without regard to case."""
        now = self.config.clock.now()
        if self._tenants is None or now - self._tenants[0] > TENANTS_KEPT:
            page = backend.list_executions(limit=TENANTS_LOOKED_AT)
            found = sorted({e.tenant_id for e in page.items}, key=str.casefold)
            self._tenants = (now, found)
        return self._tenants[1]

    def tenant(self, backend: SagaBackend, typed: str | None) -> str | None:
        """``typed`` as a known tenant spells it (``ACME`` finds ``acme``), else as typed."""
        if not typed:
            return None
        known = self.known_tenants(backend)
        if typed in known:
            return typed
        same = [t for t in known if t.casefold() == typed.casefold()]
        return same[0] if len(same) == 1 else typed

    async def _form(self, request: Request) -> Any:
        form = await request.form()
        check_csrf(form, self.config.token)
        return form

    async def _act(
        self, action: ActionRequest, back: str, on_refusal: Callable[[Job], Response]
    ) -> Response:
        """Hand ``action`` to the worker; wait ``action_wait`` at most, so a refusal shows on
        the form it came from (``on_refusal``), then go ``back`` to the page that shows the
        action's progress."""
        job = self.worker.submit(action)
        job = await anyio.to_thread.run_sync(self.worker.wait, job.id, self.config.action_wait)
        if job.state is JobState.FAILED and job.error_code in (400, 404, 409):
            return await run_in_threadpool(on_refusal, job)
        return RedirectResponse(back, 303)

    # --- executions --------------------------------------------------------------------------

    def executions(self, request: Request) -> Response:
        """``list_executions`` with the form's filters; ``next`` is the page token, ``prev``
        the tokens of the pages before it (the backend pages forward only)."""
        params = request.query_params
        filters = {k: params.get(k, "").strip() for k in _LIST_FILTERS}
        token = params.get("next") or None
        earlier = [t for t in params.get("prev", "").split(",") if t] if token else []
        try:
            with self.backend() as backend:
                filters["tenant"] = self.tenant(backend, filters["tenant"]) or ""
                tenants = self.known_tenants(backend)
                page = backend.list_executions(
                    saga=filters["saga"] or None,
                    tenant=filters["tenant"] or None,
                    status=filters["status"] or None,
                    outcome=filters["outcome"] or None,
                    since=filters["since"] or None,
                    limit=self.config.page_size,
                    next_token=token,
                )
                total = None
                if isinstance(backend, SupportsCount):
                    total = backend.count_executions(**{k: v or None for k, v in filters.items()})
        except StepSagaError as exc:
            return self.refused(exc)
        given = {k: v for k, v in filters.items() if v}
        trail = [*earlier, token] if token else []
        next_url = None
        if page.next_token:
            query = {**given, "next": page.next_token, "prev": ",".join(trail)}
            next_url = f"/executions?{urlencode(query)}"
        prev_url = None
        if token:
            back = {**given}
            if len(earlier) > 0 and earlier[-1]:
                back |= {"next": earlier[-1], "prev": ",".join(earlier[:-1])}
            prev_url = f"/executions?{urlencode(back)}"
        return self.page(
            "executions.html",
            executions=page.items,
            tenants=tenants,
            filters=filters,
            filtered=bool(given),
            statuses=[s.value for s in ExecutionStatus],
            outcomes=[o.value for o in CaseOutcome],
            next_url=next_url,
            prev_url=prev_url,
            page_number=len(trail) + 1,
            first=len(trail) * self.config.page_size + 1,
            total=total,
        )

    def execution(self, request: Request) -> Response:
        return self._execution_page(
            request.path_params["name"], request.query_params.get("tenant") or None, who(request)
        )

    def _execution_page(
        self,
        name: str,
        tenant: str | None,
        person: str | None,
        *,
        form_error: str | None = None,
        form: str = "",
        note: str = "",
        code: int = 200,
    ) -> Response:
        """``form_error`` and ``note`` came back from ``form`` (``stop``, ``cancel``): the
        refusal shows there, with the note as typed."""
        try:
            with self.backend() as backend:
                view = backend.status(name, tenant=tenant)
                events = backend.history(view.execution_arn)["events"]
                chosen = None
                if isinstance(backend, SupportsRetryDelays):
                    chosen = backend.retry_delays(view.execution_arn)
                items = [backend.recon_show(item_id) for item_id in view.open_items]
                held = stopped({"status": view.status, "error": view.error})
                superseded_by = _superseded_by(backend, view) if held else None
                # the backend's rule: it cancels a running execution or one an operator
                # stopped; a superseded one it would leave as it is (its later revision owns
                # the case's effects)
                cancellable = view.status == "RUNNING" or (held and superseded_by is None)
                operator = (person or backend.whoami()) if cancellable else None
            records = self._records(view)
        except StepSagaError as exc:
            return self.refused(exc)
        runs = step_runs(events)
        full, folded = self._graph(view.saga)
        visited = Visited.from_path(entered_states(events))
        anchors = {
            folded.owner.get(run.state, run.state): f"step-{run.state}-{i}"
            for i, run in enumerate(runs, 1)
        }
        job = self.worker.latest(view.name)
        moving = (job is not None and not job.state.settled) or (
            view.status == "RUNNING" and not view.waiting_for
        )
        return self.page(
            "execution.html",
            status_code=code,
            view=view,
            picture=layout(folded.graph, folded.visited(visited)),
            full_picture=layout(full, visited),
            statuses=state_statuses(runs, folded.owner),
            full_statuses=state_statuses(runs),
            anchors=anchors,
            full_anchors={run.state: f"step-{run.state}-{i}" for i, run in enumerate(runs, 1)},
            runs=runs,
            steps=_step_of_run(view, runs),
            case_input=case_input(events),
            entries=timeline(events, chosen),
            records=records,
            items=items,
            redrivable=_redrivable(view),
            stoppable=view.status == "RUNNING",
            cancellable=cancellable,
            # cancelled before (``cancel_cause``): again retries what failed, replays the rest
            cancelled=held and (view.cause or "").startswith("cancelled by "),
            superseded_by=superseded_by,
            operator=operator,
            job=job,
            live_interval=1000 if moving else 0,
            form_error=form_error,
            form=form,
            note=note,
        )

    async def redrive(self, request: Request) -> Response:
        name = request.path_params["name"]
        try:
            form = await self._form(request)
        except ForbiddenError as exc:
            return self.refused(exc)
        tenant = str(form.get("tenant") or "") or None
        return await self._act(
            ActionRequest("redrive", name, tenant=tenant, by=who(request)),
            request_url("/executions/" + name, tenant=tenant),
            lambda job: self._execution_page(
                name, tenant, who(request), form_error=job.error, code=job.error_code or 400
            ),
        )

    async def stop(self, request: Request) -> Response:
        """Freeze the execution as it stands (its applied effects stay)."""
        return await self._noted(request, "stop", "Note: say why you stop it.")

    async def cancel(self, request: Request) -> Response:
        """Stop the execution and undo its completed steps (``SagaBackend.cancel``)."""
        return await self._noted(request, "cancel", "Note: say why you cancel it.")

    async def _noted(self, request: Request, action: str, missing: str) -> Response:
        """``stop`` and ``cancel``: a note is required, and a refusal (the page's own or the
        backend's) comes back on the form it came from with the note kept."""
        name = request.path_params["name"]
        try:
            form = await self._form(request)
        except ForbiddenError as exc:
            return self.refused(exc)
        tenant = str(form.get("tenant") or "") or None
        note = str(form.get("note") or "").strip()
        if not note:
            return await run_in_threadpool(
                lambda: self._execution_page(
                    name, tenant, who(request), form_error=missing, form=action, code=400
                )
            )
        return await self._act(
            ActionRequest(action, name, tenant=tenant, note=note, by=who(request)),
            request_url("/executions/" + name, tenant=tenant),
            lambda job: self._execution_page(
                name,
                tenant,
                who(request),
                form_error=web_wording(job.error or ""),
                form=action,
                note=note,
                code=job.error_code or 400,
            ),
        )

    def _records(self, view: ExecutionView) -> dict[str, Record]:
        """The ledger records of this execution's revision, by action key."""
        ledger = self.config.open_ledger()
        if ledger is None:
            return {}
        with ledger:
            found = ledger.list(tenant=view.tenant_id, case=view.case_id)
        return {r.key: r for r in found if r.revision == view.revision}

    def _graph(self, saga_name: str) -> tuple[StateGraph, Folded]:
        if saga_name not in self._graphs:
            from stepsaga.workflow._compiler import compile  # as `stepsaga graph` does

            saga = self.config.project.saga(saga_name)
            full = build_graph(compile(saga), saga.name)
            self._graphs[saga_name] = (full, fold(full))
        return self._graphs[saga_name]

    # --- reconciliation ----------------------------------------------------------------------

    def queue(self, request: Request) -> Response:
        params = request.query_params
        try:
            status = ReconFilter(params.get("status") or ReconFilter.OPEN.value)
        except ValueError:
            return self.refused(
                InvalidInputError("Status: choose open, resolved or all.", field="status")
            )
        kind = params.get("kind") or ""
        if kind and kind not in QUEUE_KINDS:
            return self.refused(
                InvalidInputError(
                    "Kind: choose waits, escalations or dual control pending.", field="kind"
                )
            )
        tenant = params.get("tenant") or None
        case = params.get("case") or None
        try:
            with self.backend() as backend:
                tenant = self.tenant(backend, tenant)
                tenants = self.known_tenants(backend)
                items = backend.recon_list(status=status, tenant=tenant, case=case)
        except StepSagaError as exc:
            return self.refused(exc)
        counts = {name: sum(1 for i in items if rule(i)) for name, rule in QUEUE_KINDS.items()}
        shown = [i for i in items if QUEUE_KINDS[kind](i)] if kind else items
        now = self.config.clock.now()
        rows = [
            {
                "item": item,
                "age": age_text((now - item.created_at).total_seconds()),
                "overdue": item.status == "OPEN"
                and is_overdue(item.created_at, now=now, threshold=self.config.overdue_after),
            }
            for item in shown
        ]
        return self.page(
            "queue.html",
            rows=rows,
            tenants=tenants,
            total=len(items),
            counts=counts,
            kind=kind,
            kind_urls={
                name: request_url(
                    "/reconciliation", status=status.value, tenant=tenant, case=case, kind=name
                )
                for name in ["", *QUEUE_KINDS]
            },
            status=status.value,
            tenant=tenant or "",
            case=case or "",
            overdue_hours=self.config.overdue_after.total_seconds() / 3600,
        )

    def item(self, request: Request) -> Response:
        return self._item_page(request.path_params["item_id"], who(request))

    def _item_page(
        self,
        item_id: str,
        person: str | None,
        *,
        form_error: str | None = None,
        outcome: str = "",
        note: str = "",
        code: int = 200,
    ) -> Response:
        try:
            with self.backend() as backend:
                item = backend.recon_show(item_id)
                operator = person or backend.whoami()
                continuation = None
                if item.status == "RESOLVED":
                    continuation = backend.status(item.case_id, tenant=item.tenant_id)
        except StepSagaError as exc:
            return self.refused(exc)
        now = self.config.clock.now()
        job = self.worker.latest(item_id)
        first_by = (item.first_approval or {}).get("by")
        return self.page(
            "item.html",
            status_code=code,
            item=item,
            operator=operator,
            personal=person is not None,
            continuation=continuation,
            age=age_text((now - item.created_at).total_seconds()),
            overdue=item.status == "OPEN"
            and is_overdue(item.created_at, now=now, threshold=self.config.overdue_after),
            # the first approver waits for someone else: no form to send again
            awaiting_other=item.awaiting_second_approver and first_by == operator,
            job=job,
            live_interval=1000 if job is not None and not job.state.settled else 0,
            form_error=form_error,
            outcome=outcome,
            note=note,
        )

    async def resolve(self, request: Request) -> Response:
        item_id = request.path_params["item_id"]
        try:
            form = await self._form(request)
        except ForbiddenError as exc:
            return self.refused(exc)
        outcome = str(form.get("outcome") or "")
        note = str(form.get("note") or "").strip()
        problem = None
        if outcome not in ("applied", "not_applied"):
            problem = "Outcome: choose applied or not applied."
        elif not note:
            problem = "Note: say what you checked (it is kept on the item)."
        if problem is not None:
            return await run_in_threadpool(
                lambda: self._item_page(
                    item_id, who(request), form_error=problem, outcome=outcome, note=note, code=400
                )
            )
        return await self._act(
            ActionRequest("resolve", item_id, note=note, outcome=outcome, by=who(request)),
            f"/reconciliation/{_path(item_id)}",
            lambda job: self._item_page(
                item_id,
                who(request),
                form_error=job.error,
                outcome=outcome,
                note=note,
                code=job.error_code or 400,
            ),
        )

    # --- ledger and search -------------------------------------------------------------------

    def ledger(self, request: Request) -> Response:
        tenant = request.query_params.get("tenant") or None
        case = request.query_params.get("case") or None
        try:
            with self.backend() as backend:
                tenant = self.tenant(backend, tenant)
                tenants = self.known_tenants(backend)
            ledger = self.config.open_ledger()
            records: list[Record] = []
            if ledger is not None:
                with ledger:
                    records = ledger.list(tenant=tenant, case=case, limit=LEDGER_LIMIT)
        except StepSagaError as exc:
            return self.refused(exc)
        return self.page(
            "ledger.html",
            records=records,
            tenants=tenants,
            tenant=tenant or "",
            case=case or "",
            limit=LEDGER_LIMIT,
        )

    def search(self, request: Request) -> Response:
        """An execution name or ARN, a case id, or an item id: straight to its page; else
        the executions whose case input has the value as a top-level string (an order id),
        where the backend can search inputs: one straight to its page, several listed."""
        query = (request.query_params.get("q") or "").strip()
        if not query:
            return RedirectResponse("/executions", 303)
        found: list[Any] = []
        try:
            with self.backend() as backend:
                try:
                    view = backend.status(query)
                    return RedirectResponse(
                        request_url("/executions/" + view.name, tenant=view.tenant_id), 303
                    )
                except NotFoundError:
                    pass
                try:
                    item = backend.recon_show(query)
                    return RedirectResponse(f"/reconciliation/{_path(item.id)}", 303)
                except NotFoundError:
                    pass
                searchable = isinstance(backend, SupportsValueSearch)
                if isinstance(backend, SupportsValueSearch):
                    found = backend.find_executions(query, limit=SEARCH_SHOWN)
        except StepSagaError as exc:
            return self.refused(exc)
        if len(found) == 1:
            return RedirectResponse(
                request_url("/executions/" + found[0].name, tenant=found[0].tenant_id), 303
            )
        if found:
            return self.page("search.html", query=query, executions=found, limit=SEARCH_SHOWN)
        what = "an execution name, a case id, an item id"
        what += " or a value of a case's input (an order id)" if searchable else ""
        return self.refused(NotFoundError(f"Nothing found for {query!r}: try {what}."))


def who(request: Request) -> str | None:
    """The person whose personal token signed ``request`` (``TokenGate``); ``None``: the
    console's own token, so the backend's operator acts."""
    person = request.scope.get(OPERATOR_SCOPE_KEY)
    return person if isinstance(person, str) else None


def _step_of_run(view: ExecutionView, runs: list[StepRun]) -> list[StepView | None]:
    """Each run's step in the case's view: by the action key its reply named, else by its
    state when only one step has it (the items of a per-item step share their state)."""
    by_key = {s.action_key: s for s in view.steps}
    by_state: dict[str, list[StepView]] = {}
    for step in view.steps:
        by_state.setdefault(step.state, []).append(step)
    found: list[StepView | None] = []
    for run in runs:
        same = by_state.get(run.state, [])
        found.append(by_key.get(run.action_key or "") or (same[0] if len(same) == 1 else None))
    return found


def _superseded_by(backend: SagaBackend, view: ExecutionView) -> str | None:
    """The case's newest execution when it is a later revision than ``view``'s."""
    try:
        newest = backend.status(view.case_id, tenant=view.tenant_id)
    except StepSagaError:
        return None  # e.g. an execution named like the case: the backend decides on cancel
    return newest.name if newest.revision > view.revision else None


def _redrivable(view: ExecutionView) -> bool:
    """What the backend says (``redriveStatus``), else AWS's rule on the status."""
    if view.redrive_status is not None:
        return view.redrive_status == "REDRIVABLE"
    return view.status in REDRIVABLE


def _path(segment: str) -> str:
    return quote(segment, safe="")


def request_url(path: str, **query: str | None) -> str:
    """``path`` (its last segment quoted) with the non-empty ``query`` values."""
    head, _, last = path.rpartition("/")
    given = {k: v for k, v in query.items() if v}
    return f"{head}/{_path(last)}" + (f"?{urlencode(given)}" if given else "")


def create_app(config: ConsoleConfig) -> Starlette:
    """The console as an ASGI app (``serve`` runs it with uvicorn)."""
    return Console(config).app()
