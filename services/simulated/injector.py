"""Firing faults: count the call, pick the rules, misbehave at the right moment.

Counts live in ``services.sqlite3`` (``call_counts``, ``fault_fires``), not in memory, so a
rule with ``attempt: 2`` or ``times: 1`` means the same thing after the process was killed
and the execution redriven in a new one. The counting transaction commits *before* the
effect, so a call that crashes still counts as made — as it would for a real service.

Rules come from two places: faults attached to the case (``Simulation.attach_faults``,
done at ``start`` so a redrive in another process sees them) and faults given to
``open_simulated_services`` for every case. A rule present in both is one rule.
"""

from __future__ import annotations

import os
import signal
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass

from services import error_mapping
from services.faults import FaultKind, FaultRule, Faults, faults_from_json, select_rules
from services.simulated.db import ServicesDb
from services.values import Operation
from stepsaga import CallContext

Sleeper = Callable[[float], None]


@dataclass(frozen=True)
class CrashSite:
    """Where a ``crash_after_effect`` fired (for the crash action; no personal data)."""

    operation: Operation
    tenant_id: str
    case_id: str
    action_key: str
    call_number: int


CrashAction = Callable[[CrashSite], None]


class SimulatedCrash(BaseException):
    """Raised by ``raise_simulated_crash`` so in-process tests can "die" and go on.

    A ``BaseException``, like ``KeyboardInterrupt``: no handler's ``except Exception`` can
    swallow it and record an outcome it never saw, which is what a real crash guarantees.
    """

    def __init__(self, site: CrashSite) -> None:
        super().__init__(f"simulated crash after {site.operation} (call {site.call_number})")
        self.site = site


def kill_process(site: CrashSite) -> None:
    """The default crash: SIGKILL ourselves — no ``finally``, no atexit, no flush."""
    os.kill(os.getpid(), signal.SIGKILL)


def raise_simulated_crash(site: CrashSite) -> None:
    raise SimulatedCrash(site)


@dataclass(frozen=True)
class CallPlan:
    """What this call will suffer; ``after_effect`` fires once the effect is committed."""

    site: CrashSite
    delay_seconds: float
    outcome: FaultKind | None

    @property
    def call_number(self) -> int:
        return self.site.call_number


class FaultInjector:
    def __init__(
        self,
        db: ServicesDb,
        faults: Faults | None,
        *,
        sleeper: Sleeper,
        crash: CrashAction,
    ) -> None:
        self._db = db
        self._faults = faults.faults if faults else ()
        self._sleep = sleeper
        self._crash = crash

    def before_effect(self, ctx: CallContext, operation: Operation) -> CallPlan:
        """Count the call and decide its faults; sleep for ``slow``; raise what a client
        would see for faults that strike before the effect."""
        plan = self._plan(ctx, operation)
        if plan.delay_seconds > 0:
            self._sleep(plan.delay_seconds)
        if plan.outcome is not None and not plan.outcome.after_effect:
            error = error_mapping.for_fault(operation, plan.outcome)
            if error is not None:
                raise error
        return plan

    def after_effect(self, plan: CallPlan) -> None:
        """The effect is committed: lose the reply or die, if planned."""
        if plan.outcome is FaultKind.CRASH_AFTER_EFFECT:
            self._crash(plan.site)
            raise SimulatedCrash(plan.site)  # a crash action that returned must not go on
        if plan.outcome is FaultKind.LOSE_RESPONSE:
            error = error_mapping.for_fault(plan.site.operation, plan.outcome)
            if error is not None:
                raise error

    def _plan(self, ctx: CallContext, operation: Operation) -> CallPlan:
        with self._db.write() as conn:
            call_number = _count_call(conn, ctx, operation)
            rules = self._rules(conn, ctx)
            fired = _fired(conn, ctx, rules)
            chosen = select_rules(rules, operation, ctx.case_id, call_number, fired, ctx.action_key)
            for rule in chosen:
                _record_fire(conn, ctx, rule)
        site = CrashSite(operation, ctx.tenant_id, ctx.case_id, ctx.action_key, call_number)
        delay = sum(rule.seconds or 0.0 for rule in chosen if rule.fault is FaultKind.SLOW)
        outcome = next((rule.fault for rule in chosen if rule.fault is not FaultKind.SLOW), None)
        return CallPlan(site, delay, outcome)

    def _rules(self, conn: sqlite3.Connection, ctx: CallContext) -> list[FaultRule]:
        row = conn.execute(
            "SELECT faults FROM case_faults WHERE tenant_id = ? AND case_id = ?",
            (ctx.tenant_id, ctx.case_id),
        ).fetchone()
        attached = faults_from_json(row["faults"]).faults if row else ()
        unique: dict[str, FaultRule] = {}
        for rule in (*attached, *self._faults):
            unique.setdefault(rule.fingerprint, rule)
        return list(unique.values())


def _count_call(conn: sqlite3.Connection, ctx: CallContext, operation: Operation) -> int:
    row = conn.execute(
        """INSERT INTO call_counts (tenant_id, case_id, operation, calls) VALUES (?, ?, ?, 1)
           ON CONFLICT (tenant_id, case_id, operation) DO UPDATE SET calls = calls + 1
           RETURNING calls""",
        (ctx.tenant_id, ctx.case_id, str(operation)),
    ).fetchone()
    return int(row["calls"])


def _fired(conn: sqlite3.Connection, ctx: CallContext, rules: list[FaultRule]) -> dict[str, int]:
    limited = [rule.fingerprint for rule in rules if rule.times is not None]
    if not limited:
        return {}
    marks = ",".join("?" * len(limited))
    rows = conn.execute(
        f"SELECT rule, fired FROM fault_fires WHERE tenant_id = ? AND case_id = ? "
        f"AND rule IN ({marks})",
        (ctx.tenant_id, ctx.case_id, *limited),
    ).fetchall()
    return {row["rule"]: int(row["fired"]) for row in rows}


def _record_fire(conn: sqlite3.Connection, ctx: CallContext, rule: FaultRule) -> None:
    conn.execute(
        """INSERT INTO fault_fires (tenant_id, case_id, rule, fired) VALUES (?, ?, ?, 1)
           ON CONFLICT (tenant_id, case_id, rule) DO UPDATE SET fired = fired + 1""",
        (ctx.tenant_id, ctx.case_id, rule.fingerprint),
    )
