"""The chaos run: start every case under its faults and kills, recover like an operator, check.

1. **Start** every case in its own child process (at most ``parallel`` at once).
2. **Recover**, round after round, until every case is settled:
   the operator waits out the dead workers' leases (the clock moves past lease + sweep
   grace), sometimes runs ``ledger sweep`` first (stale claims → ``UNKNOWN``), then per case:
   ``failed`` (interrupted, retries exhausted) → ``redrive``; ``awaiting_reconciliation`` →
   ``recon resolve`` of the item the case waits on, decided from the services' effects
   table (the effect is there → applied, else not applied). Automatic reconciliation runs
   inside the saga. Kill points still pending strike during recovery too.
3. **Check** the invariants (``invariants.py``) and count.

Children never run at the same time as the harness's own reads, so a status read sees
only dead or finished workers (and reaps the dead: ``ABORTED``, ``Stepsaga.Interrupted``).
"""

from __future__ import annotations

import json
import random
import sqlite3
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from reliability.clock import ShiftedClock
from reliability.invariants import (
    RELEASES,
    CaseTruth,
    Violation,
    check_all,
    duplicates,
)
from reliability.kills import read_lines
from reliability.plan import (
    REPLACEMENT_ORDER,
    TENANTS,
    CasePlan,
    KillPoint,
    KillSite,
    make_plans,
    revised,
)
from reliability.runner import Command, Job, JobResult, run_jobs
from reliability.workspace import Workspace
from services import open_simulation
from services.simulated import Effect
from stepsaga._reconciliation import AUTO_RESOLVER
from stepsaga._reconciliation.reasons import Reason
from stepsaga.backends import (
    CaseOutcome,
    ExecutionView,
    LocalBackend,
    ReconFilter,
    ReconItemView,
    ReconOutcome,
)
from stepsaga.backends._naming import execution_name
from stepsaga.errors import NotFoundError
from stepsaga.ledger import LedgerPolicy, open_ledger
from workflows.project import reference_project

SETTLED = (CaseOutcome.COMPLETED, CaseOutcome.COMPENSATED, CaseOutcome.COMPENSATION_FAILED)


@dataclass(frozen=True)
class ChaosConfig:
    cases: int = 50
    seed: int = 20261129
    parallel: int = 2
    """Child processes at once."""
    max_rounds: int = 12
    """Recovery rounds before an unsettled case counts as stuck."""
    budget: int = 1_000_000
    """Each tenant's budget (every forward step costs 1)."""
    sweep_probability: float = 0.5
    """How often a recovery round starts with ``ledger sweep``."""
    only: tuple[int, ...] = ()
    """Run only these case indexes (to reproduce one); empty: all."""
    revise: float = 0.0
    """The "new revision after completion/compensation" plan: this share of the cases that
    settled completed or compensated is re-approved as revision 2 (half of them with the
    refund's amount changed) and run again under the kills still pending; a revision
    conflict is decided from the services' table (the earlier effect exists: applied)."""
    one_file: bool = False
    """The home keeps its ledger in the engine's file: outcome and checkpoint share a commit."""


@dataclass
class ChaosReport:
    config: ChaosConfig
    cases: int = 0
    kills: Counter[str] = field(default_factory=Counter)
    """Kills that struck, by site (``crash_after_effect`` included)."""
    redrives: int = 0
    resolves: int = 0
    sweeps: int = 0
    swept: int = 0
    rounds: int = 0
    job_errors: Counter[str] = field(default_factory=Counter)
    """Child commands that ended in an error (not a kill), by error name."""
    outcomes: Counter[str] = field(default_factory=Counter)
    case_outcomes: dict[int, str] = field(default_factory=dict)
    """Each case's outcome, by plan index."""
    compensation_failures: Counter[str] = field(default_factory=Counter)
    """Why compensations failed (the open item's last error), by error name."""
    compensations_reconciled: Counter[str] = field(default_factory=Counter)
    """Failed releases that automatic reconciliation decided, by outcome (items resolved
    by ``stepsaga:auto`` on the release's key)."""
    effects: Counter[str] = field(default_factory=Counter)
    faults: Counter[str] = field(default_factory=Counter)
    """Fault rules planned, by kind."""
    open_items: int = 0
    duplicates: int = 0
    revised: int = 0
    """Cases re-approved as revision 2."""
    violations: list[Violation] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def kills_injected(self) -> int:
        return sum(self.kills.values())

    @property
    def recoveries(self) -> int:
        return self.redrives + self.resolves + self.sweeps

    def lines(self) -> list[str]:
        c = self.config
        by_site = Counter[str]()
        for kill_id, number in self.kills.items():
            by_site[kill_id.split(":", 1)[0]] += number
        return [
            f"seed {c.seed}, {self.cases} cases, parallel {c.parallel}, {self.seconds:.1f} s",
            f"kills injected: {self.kills_injected} ({_counts(by_site)})",
            f"faults planned: {sum(self.faults.values())} ({_counts(self.faults)})",
            f"recoveries: {self.recoveries} (redrives {self.redrives}, resolves "
            f"{self.resolves}, sweeps {self.sweeps} turning {self.swept} claims UNKNOWN) "
            f"in {self.rounds} rounds",
            f"command errors (not kills): {sum(self.job_errors.values())} "
            f"({_counts(self.job_errors)})",
            f"outcomes: {_counts(self.outcomes)}; open items left: {self.open_items}",
            f"compensations failed because of: {_counts(self.compensation_failures)}",
            f"failed releases reconciled automatically: {_counts(self.compensations_reconciled)}",
            f"effects: {_counts(self.effects)}",
            f"revised (revision 2 after completion/compensation): {self.revised}",
            f"duplicates found: {self.duplicates}",
            f"invariant violations: {len(self.violations)}",
        ]

    def to_json(self) -> dict[str, object]:
        return {
            "seed": self.config.seed,
            "cases": self.cases,
            "kills_injected": self.kills_injected,
            "kills": dict(self.kills),
            "recoveries": self.recoveries,
            "redrives": self.redrives,
            "resolves": self.resolves,
            "sweeps": self.sweeps,
            "swept": self.swept,
            "rounds": self.rounds,
            "outcomes": dict(self.outcomes),
            "compensation_failures": dict(self.compensation_failures),
            "compensations_reconciled": dict(self.compensations_reconciled),
            "effects": dict(self.effects),
            "revised": self.revised,
            "duplicates": self.duplicates,
            "violations": [str(v) for v in self.violations],
            "seconds": round(self.seconds, 1),
        }


def run_chaos(
    config: ChaosConfig,
    root: Path,
    *,
    plans: list[CasePlan] | None = None,
    say: Callable[[str], None] = lambda line: None,
) -> ChaosReport:
    """Run ``config.cases`` cases under ``root`` (an empty folder) and check them.

    ``plans`` replaces the seeded plans (hand-written scenarios, approved now)."""
    started = time.monotonic()
    space = Workspace(root, one_file=config.one_file).create()
    if plans is None:
        plans = make_plans(config.seed, config.cases, approval_time())
    if config.only:
        plans = [plan for plan in plans if plan.index in config.only]
    _write_inputs(space, plans)
    with open_ledger(space.home.ensure().ledger_url) as ledger:
        for tenant in TENANTS:
            ledger.set_budget(tenant, config.budget)
    report = ChaosReport(config, cases=len(plans))
    for plan in plans:
        report.faults.update(str(rule["fault"]) for rule in plan.faults)
    run = _Run(config, space, plans, report, say)
    run.start_all()
    run.recover()
    if config.revise:
        run.revise()
        run.recover()
    run.check()
    report.seconds = time.monotonic() - started
    return report


class _Run:
    def __init__(
        self,
        config: ChaosConfig,
        space: Workspace,
        plans: list[CasePlan],
        report: ChaosReport,
        say: Callable[[str], None],
    ) -> None:
        self.config = config
        self.space = space
        self.plans = plans
        self.report = report
        self.say = say
        self.rng = random.Random(config.seed ^ 0x5EED)  # noqa: S311 (operator's coin flips)
        self.offset = 0.0
        self.seq = 0
        self.notes_read = 0
        self.fired: dict[int, set[str]] = {}
        """Kill ids that struck, by case index (from the dying processes' notes)."""
        policy = LedgerPolicy()
        self.wait_out = policy.lease_seconds + policy.sweep_grace_seconds + 1
        self.revisions: dict[int, int] = {}
        """The newest revision started, by case index (absent: 1)."""

    def start_all(self) -> None:
        jobs = [self._job(Command.START, plan) for plan in self.plans]
        self._run(jobs)
        self.say(f"started {len(jobs)} cases; {self.report.kills_injected} killed on the way")

    def recover(self) -> None:
        unsettled = list(self.plans)
        for round_number in range(1, self.config.max_rounds + 1):
            views = self._views(unsettled)
            unsettled = [p for p in unsettled if _outcome(views.get(p.index)) not in SETTLED]
            if not unsettled:
                return
            self.report.rounds = round_number
            self.offset += self.wait_out  # the operator waits out the dead workers' leases
            if self.rng.random() < self.config.sweep_probability:
                self.report.sweeps += 1
                for result in self._run([self._job(Command.SWEEP, None)]):
                    self.report.swept += int(result.data.get("swept", 0))
            jobs = self._recovery_jobs(unsettled, views)
            self._run(jobs)
            self.say(f"round {round_number}: {len(unsettled)} unsettled, {len(jobs)} commands")

    def revise(self) -> None:
        """Re-approve a share of the settled cases as revision 2 and start them."""
        views = self._views(self.plans)
        chosen = [
            plan
            for plan in self.plans
            if _outcome(views.get(plan.index)) in (CaseOutcome.COMPLETED, CaseOutcome.COMPENSATED)
            and plan.saga == REPLACEMENT_ORDER
            and self.rng.random() < self.config.revise
        ]
        approved = approval_time()
        for plan in chosen:
            case = revised(plan, approved, change_refund=self.rng.random() < 0.5)
            self.space.case_file(plan.index, 2).write_text(json.dumps(case, indent=1))
            self.revisions[plan.index] = 2
        self.report.revised = len(chosen)
        self._run([self._job(Command.START, plan) for plan in chosen])
        self.say(f"revised {len(chosen)} settled cases as revision 2")

    def check(self) -> None:
        """Read the outside truth and the ledger; count; check every invariant."""
        home, report = self.space.home, self.report
        views = self._views(self.plans)
        effects: dict[tuple[str, str], list[Effect]] = defaultdict(list)
        for effect in open_simulation(home).effects():
            effects[(effect.tenant_id, effect.case_id)].append(effect)
            report.effects[str(effect.operation)] += 1
        with open_ledger(home.ledger_url) as ledger:
            records = {tenant: ledger.list(tenant=tenant) for tenant in TENANTS}
            items = ledger.list_items()
            budgets = {tenant: (self.config.budget, ledger.budget(tenant)) for tenant in TENANTS}
        truths = []
        for plan in self.plans:
            view = views.get(plan.index)
            truths.append(
                CaseTruth(
                    plan=plan,
                    outcome=view.outcome if view else None,
                    effects=tuple(effects.get(plan.key, ())),
                    records=tuple(
                        r for r in records.get(plan.tenant_id, ()) if r.case_id == plan.case_id
                    ),
                    items=tuple(i for i in items if (i.tenant_id, i.case_id) == plan.key),
                )
            )
            outcome = view.outcome.value if view else "no execution"
            report.outcomes[outcome] += 1
            report.case_outcomes[plan.index] = outcome
        report.open_items = sum(len(truth.open_items) for truth in truths)
        for truth in truths:
            for item in truth.open_items:
                if truth.outcome is CaseOutcome.COMPENSATION_FAILED and item.step in (
                    "ReleaseReservation",
                    "ReleaseLine",
                ):
                    error = item.evidence.get("last_error") or {}
                    report.compensation_failures[str(error.get("error", "?"))] += 1
            for item in truth.items:
                if RELEASES in item.record_key and item.resolved_by == AUTO_RESOLVER:
                    outcome = item.outcome.value if item.outcome else "?"
                    report.compensations_reconciled[outcome] += 1
        report.duplicates = duplicates(truths)
        report.violations = check_all(truths, budgets, records)
        report.violations += _integrity(home.ledger_path, home.executions_path, home.services_path)

    # --- deciding what the operator does ----------------------------------------------------

    def _recovery_jobs(self, plans: list[CasePlan], views: dict[int, ExecutionView]) -> list[Job]:
        """One command per unsettled case (a sweep changes records, never outcomes)."""
        with self._backend() as backend:
            items = backend.recon_list(status=ReconFilter.ALL)
        simulation = open_simulation(self.space.home)
        jobs: list[Job] = []
        for plan in plans:
            view = views.get(plan.index)
            if view is None:
                jobs.append(self._job(Command.START, plan))  # the start itself never got far
            elif view.outcome is CaseOutcome.FAILED:
                self.report.redrives += 1
                jobs.append(self._job(Command.REDRIVE, plan, execution=view.name))
            elif view.outcome is CaseOutcome.AWAITING_RECONCILIATION:
                item = _waited_on(view, items)
                if item is None:
                    continue  # nothing an operator could act on: the case counts as stuck
                if item.outcome is not None:
                    # Decided, yet the case still waits (the resolving process died before
                    # resuming it): the operator repeats the same decision.
                    decision = ReconOutcome(item.outcome)
                else:
                    effects = simulation.effects(tenant_id=plan.tenant_id, case_id=plan.case_id)
                    decision = _truth(item, effects)
                self.report.resolves += 1
                jobs.append(self._job(Command.RESOLVE, plan, item_id=item.id, decision=decision))
        return jobs

    # --- running ------------------------------------------------------------------------------

    def _job(
        self,
        command: Command,
        plan: CasePlan | None,
        *,
        execution: str = "",
        item_id: str = "",
        decision: ReconOutcome = ReconOutcome.APPLIED,
    ) -> Job:
        self.seq += 1
        return Job(
            seq=self.seq,
            command=command,
            clock_offset=self.offset,
            case_index=plan.index if plan else -1,
            execution=execution,
            pending=self._pending(plan) if plan else (),
            item_id=item_id,
            decision=decision,
            saga=plan.saga if plan else "",
            revision=self.revisions.get(plan.index, 1) if plan else 1,
        )

    def _pending(self, plan: CasePlan) -> tuple[KillPoint, ...]:
        """The case's kill points that have not struck yet (each strikes once)."""
        fired = self.fired.get(plan.index, set())
        return tuple(
            kill
            for kill in plan.kills
            if kill.site is not KillSite.CRASH_AFTER_EFFECT and kill.id not in fired
        )

    def _run(self, jobs: list[Job]) -> list[JobResult]:
        results = run_jobs(self.space, jobs, self.config.parallel)
        notes = read_lines(self.space.kill_notes)[self.notes_read :]
        self.notes_read += len(notes)
        for note in notes:
            self.report.kills[str(note["kill"])] += 1
            self.fired.setdefault(int(str(note["case"])), set()).add(str(note["kill"]))
        for result in results:
            if result.killed:
                continue
            if result.exitcode != 0:
                error = result.error or f"exit {result.exitcode}"
                self.report.job_errors[error.split(":", 1)[0]] += 1
                self.say(f"  {result.job.command} of case {result.job.case_index}: {error}")
        return results

    def _backend(self) -> LocalBackend:
        return LocalBackend(
            self.space.home,
            reference_project(),
            clock=ShiftedClock(self.offset),
            log_level="CRITICAL",
        )

    def _views(self, plans: Iterable[CasePlan]) -> dict[int, ExecutionView]:
        views: dict[int, ExecutionView] = {}
        with self._backend() as backend:
            for plan in plans:
                with suppress(NotFoundError):  # never started: the operator starts it again
                    name = _name(plan, self.revisions.get(plan.index, 1))
                    views[plan.index] = backend.status(name, tenant=plan.tenant_id)
        return views


def approval_time() -> datetime:
    """Cases are approved "now", so they sit inside the ledger's retention window."""
    return datetime.now(UTC).replace(microsecond=0)


def _write_inputs(space: Workspace, plans: Iterable[CasePlan]) -> None:
    for plan in plans:
        space.case_file(plan.index).write_text(json.dumps(plan.case, indent=1))
        if plan.faults:
            space.faults_file(plan.index).write_text(json.dumps({"faults": list(plan.faults)}))


def _name(plan: CasePlan, revision: int = 1) -> str:
    return execution_name(plan.tenant_id, plan.case_id, revision)


def _outcome(view: ExecutionView | None) -> CaseOutcome | None:
    return view.outcome if view is not None else None


def _waited_on(view: ExecutionView, items: Iterable[ReconItemView]) -> ReconItemView | None:
    """The item the case waits on: the newest of the waiting step's items, open first."""
    steps = {state.removeprefix("AwaitDecision") for state in view.waiting_for}
    mine = [
        item
        for item in items
        if (item.tenant_id, item.case_id) == (view.tenant_id, view.case_id) and item.step in steps
    ]
    mine.sort(key=lambda item: (item.status == "OPEN", item.created_at))
    return mine[-1] if mine else None


def _truth(item: ReconItemView, effects: Iterable[Effect]) -> ReconOutcome:
    """The operator's finding: the effect is in the services' own table, or it is not. A
    revision conflict asks about the same operation under an earlier revision: when that
    effect exists, it stands for the new revision (applied); else the step runs."""
    keys = {effect.action_key for effect in effects}
    if item.action_key in keys:
        return ReconOutcome.APPLIED
    if item.reason.startswith(Reason.REVISION_CONFLICT.value):
        operation = item.action_key.split(":", 3)[3]
        if any(key.split(":", 3)[3] == operation for key in keys):
            return ReconOutcome.APPLIED
    return ReconOutcome.NOT_APPLIED


def _integrity(*paths: Path) -> list[Violation]:
    """Every SQLite file the killed processes wrote still passes ``integrity_check``."""
    found = []
    for path in paths:
        with sqlite3.connect(path) as conn:
            verdict = conn.execute("PRAGMA integrity_check").fetchone()[0]
        conn.close()
        if verdict != "ok":
            found.append(Violation("integrity", path.name, verdict))
    return found


def _counts(counter: Counter[str]) -> str:
    return ", ".join(f"{name} {number}" for name, number in sorted(counter.items())) or "none"
