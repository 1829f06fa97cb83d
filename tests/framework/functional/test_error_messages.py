"""An unexpected exception keeps its message (bounded, redactable) and the frame that
raised it in the logs, the history's cause and the reconciliation item's evidence, end to
end on the embedded backend (the real handlers, the simulated services)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stepsaga import errors
from stepsaga._project.home import StateHome
from stepsaga._util.clock import ManualClock
from stepsaga.backends._local import LocalBackend
from stepsaga.backends._views import ReconFilter
from tasks.refund_payment import RefundPayment
from tests.framework.unit.handlers.helpers import NOW
from workflows.case import load_case
from workflows.project import reference_project

CASE = load_case(Path(__file__).parents[3] / "examples" / "case-clean.json")
BUG = "refund request not built: bug in our client code"


def buggy_perform(self: RefundPayment, services: Any, call: Any) -> Any:
    raise RuntimeError(BUG)


@pytest.fixture
def buggy(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(RefundPayment, "perform", buggy_perform)
    yield
    errors.set_message_redactor(None)


def _run(tmp_path: Path) -> tuple[str, list[str], list[dict[str, Any]]]:
    """Start the case; its failed tasks' causes and its items' last errors."""
    home = StateHome(tmp_path / "home")
    with LocalBackend(home, reference_project(), clock=ManualClock(NOW), log_level="WARNING") as b:
        done = b.start(CASE, time_scale=0)
        causes = [
            event["taskFailedEventDetails"]["cause"]
            for event in b.history(CASE.case_id)["events"]
            if event["type"] == "TaskFailed"
        ]
        items = [item.evidence["last_error"] for item in b.recon_list(status=ReconFilter.ALL)]
    return done.outcome, causes, items


def test_a_bug_in_a_handler_is_visible_in_logs_history_and_evidence(
    tmp_path: Path, buggy: None, capsys: pytest.CaptureFixture[str]
) -> None:
    outcome, causes, items = _run(tmp_path)
    frame = f"test_error_messages.py:{buggy_perform.__code__.co_firstlineno + 1} in buggy_perform"
    said = f"RuntimeError: {BUG} (at tests/framework/functional/{frame})"

    assert outcome == "awaiting_reconciliation"
    assert causes
    assert all(said in json.loads(cause)["errorMessage"] for cause in causes)
    assert items
    assert all(said in item["message"] for item in items)
    logged = [json.loads(line) for line in capsys.readouterr().err.splitlines() if BUG in line]
    assert logged, "the handler's log line names the bug"
    assert said in logged[0]["detail"]


def test_a_teams_redaction_hook_applies_everywhere(tmp_path: Path, buggy: None) -> None:
    errors.set_message_redactor(lambda message: message.replace("client", "[redacted]"))
    _, causes, items = _run(tmp_path)
    texts = [*causes, *(item["message"] for item in items)]
    assert texts
    assert all("bug in our [redacted] code" in text for text in texts)
    assert not any("client" in text for text in texts)


def test_messages_are_one_bounded_line_and_a_failing_hook_withholds_them() -> None:
    try:
        raise ValueError("line one\nline two " + "x" * 1000)
    except ValueError as exc:
        text = errors.describe(exc)
    assert "\n" not in text
    assert text.startswith("ValueError: line one line two xxx")
    message = text.split(" (at ")[0]
    assert len(message) <= len("ValueError: ") + errors.MAX_MESSAGE

    def broken(message: str) -> str:
        raise KeyError(message)

    errors.set_message_redactor(broken)
    try:
        assert "withheld" in errors.describe(ValueError("secret 4111-1111"))
        assert "4111" not in errors.describe(ValueError("secret 4111-1111"))
    finally:
        errors.set_message_redactor(None)
