"""Human output of the run and recon commands: rich tables, and the next command to type."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from stepsaga.backends import CaseOutcome, ExecutionView, ReconItemView
from stepsaga.backends._views import ExecutionPage, ResolutionView, StepKind

_OUTCOME_STYLE = {
    CaseOutcome.COMPLETED: "green",
    CaseOutcome.COMPENSATED: "yellow",
    CaseOutcome.AWAITING_RECONCILIATION: "magenta",
    CaseOutcome.COMPENSATION_FAILED: "red",
    CaseOutcome.STOPPED: "yellow",
    CaseOutcome.FAILED: "red",
    CaseOutcome.RUNNING: "cyan",
}


def _when(value: datetime | None) -> str:
    return "" if value is None else value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")


def outcome_text(outcome: CaseOutcome) -> str:
    return f"[{_OUTCOME_STYLE[outcome]}]{outcome.value}[/]"


def render_execution(console: Console, view: ExecutionView) -> None:
    console.print(
        f"[bold]{view.name}[/]  tenant {view.tenant_id}  case {view.case_id}  "
        f"revision {view.revision}",
        highlight=False,
    )
    console.print(
        f"status {view.status}  outcome {outcome_text(view.outcome)}  "
        f"redrives {view.redrive_count}",
        highlight=False,
    )
    if view.error:
        console.print(f"error {view.error}: {_short(view.cause)}", highlight=False)
    if view.reason:
        console.print(f"reason {escape(view.reason)}", highlight=False)
    table = Table("step", "ledger", "attempts")
    table.add_column("action key", overflow="fold")
    for step in view.steps:
        name = step.state if step.kind is StepKind.STEP else f"{step.state} (undo)"
        table.add_row(name, step.ledger_status or "-", str(step.attempts), step.action_key)
    console.print(table)
    for hint in _hints(view):
        console.print(f"[dim]{hint}[/]", highlight=False)


def render_executions(console: Console, page: ExecutionPage, next_command: str | None) -> None:
    """One row per execution (names never cut: they are what people copy), then the
    command that prints the next page, if there is one."""
    if not page.items:
        console.print("no executions")
    else:
        table = Table("tenant", "case", "rev", "status", "outcome", "started (UTC)")
        table.add_column("execution", overflow="fold")
        for item in page.items:
            table.add_row(
                item.tenant_id,
                item.case_id,
                str(item.revision),
                item.status,
                outcome_text(item.outcome),
                _when(item.start_date),
                item.name,
            )
        console.print(table)
    if next_command is not None:
        console.print(f"[dim]next page: {escape(next_command)}[/]", highlight=False)


def _hints(view: ExecutionView) -> list[str]:
    hints = []
    if view.outcome is CaseOutcome.FAILED and view.redrive_status == "REDRIVABLE":
        hints.append(f"redrive it: stepsaga redrive {view.name}")
    if view.waiting_for:
        hints.append(f"waiting in {', '.join(view.waiting_for)}")
    for item in view.open_items:
        hints.append(
            f"open item {item}: stepsaga recon show {item} · stepsaga recon resolve {item} "
            "--outcome applied|not-applied --by WHO --note TEXT"
        )
    return hints


def _short(text: str | None, limit: int = 160) -> str:
    if not text:
        return ""
    try:  # Lambda-style causes are JSON: show the message
        data = json.loads(text)
        if isinstance(data, dict) and "errorMessage" in data:
            text = str(data["errorMessage"])
    except ValueError:
        pass
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render_items(console: Console, items: Sequence[ReconItemView]) -> None:
    """Two lines per item (id, status, case, step; then the reason): ids are what people
    copy, so they are never cut to fit a table into a narrow terminal."""
    if not items:
        console.print("no reconciliation items")
        return
    console.print(f"{len(items)} reconciliation item(s)")
    for item in items:
        if item.outcome is not None:
            status = f"[green]{item.status} {item.outcome}[/]"
        else:
            status = f"[magenta]{item.status}{' waiting' if item.waiting else ''}[/]"
        console.print(
            f"[bold]{item.id}[/]  {status}  {item.tenant_id}/{item.case_id}  {item.step}  "
            f"[dim]{_when(item.created_at)}[/]",
            highlight=False,
        )
        console.print(f"    {item.reason}", highlight=False)


def render_item(console: Console, item: ReconItemView) -> None:
    table = Table("field", "value", show_header=False)
    data = item.model_dump(mode="json")
    for name, value in data.items():
        if name in ("evidence", "first_approval", "audit"):
            continue
        table.add_row(name, "" if value is None else str(value))
    if item.first_approval is not None:
        first = item.first_approval
        table.add_row("first_approval", f"{first['by']} at {first['at']}: {first['note']}")
    for name, value in sorted(item.evidence.items()):
        table.add_row(f"evidence.{name}", _short(json.dumps(value, default=str), 120))
    if item.audit is not None:
        audit = item.audit
        table.add_row("audit.outcome", str(audit["outcome"]))
        table.add_row("audit.at", str(audit["at"]))
        for n, decider in enumerate(audit["deciders"], start=1):
            line = f"{decider['by']} at {decider['at']}: {decider['note']}"
            table.add_row(f"audit.decider.{n}", line)
        for name, value in sorted(audit["identity"].items()):
            table.add_row(f"audit.{name}", str(value))
    console.print(table)


def render_resolution(console: Console, resolution: ResolutionView) -> None:
    item = resolution.item
    if item.awaiting_second_approver:
        assert item.first_approval is not None
        console.print(
            f"item {item.id}: not-applied approved by {item.first_approval['by']}, "
            "[bold]awaiting a second approver[/] (another person must resolve it not-applied)",
            highlight=False,
        )
        return
    console.print(
        f"item {item.id} resolved as [bold]{item.outcome}[/] by {item.resolved_by}",
        highlight=False,
    )
    if item.audit is not None and len(item.audit["deciders"]) > 1:
        first = item.audit["deciders"][0]
        console.print(f"first approver: {first['by']} ({first['note']})", highlight=False)
    if resolution.execution is None:
        console.print("no case was waiting on it")
        return
    render_execution(console, resolution.execution)


def render_history(console: Console, history: dict[str, Any]) -> None:
    table = Table("id", "timestamp", "type", "detail")
    for event in history["events"]:
        table.add_row(
            str(event["id"]), _when(event.get("timestamp")), event["type"], _detail(event)
        )
    console.print(table)


def _detail(event: dict[str, Any]) -> str:
    for key, value in event.items():
        if not key.endswith("EventDetails") or not isinstance(value, dict):
            continue
        if "name" in value:
            return str(value["name"])
        if "error" in value:
            return f"{value['error']}: {_short(value.get('cause'), 80)}"
        if "redriveCount" in value:
            return f"redrive {value['redriveCount']}"
        if "resource" in value:
            return f"{value.get('resourceType', '')}:{value['resource']}"
    return ""
