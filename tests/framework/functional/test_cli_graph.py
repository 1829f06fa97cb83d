"""``stepsaga graph --execution``: the path an execution took, highlighted."""

from __future__ import annotations

from pathlib import Path

from stepsaga._project.home import StateHome
from tests.framework.functional.cli_support import EXAMPLES, cli, write_case


def _visited_line(text: str) -> list[str]:
    lines = [line for line in text.splitlines() if line.strip().endswith(" visited")]
    assert len(lines) == 1, text
    return lines[0].split()[1].split(",")


def test_graph_highlights_the_path_taken(home: StateHome, tmp_path: Path) -> None:
    faults = EXAMPLES / "faults-shipment-rejected.json"
    cli(home, "start", str(write_case(tmp_path)), "--faults", str(faults))
    result = cli(home, "graph", "--execution", "CASE-1001")
    assert result.code == 0, result.err
    visited = _visited_line(result.out)
    assert "ReleaseReservation" in visited
    assert "EscalateRefundPayment" in visited
    assert "Compensated" in visited
    dot = cli(home, "graph", "--execution", "acme-CASE-1001-r1", "--format", "dot")
    assert dot.code == 0
    assert "ReleaseReservation" in dot.out


def test_graph_of_a_clean_run(home: StateHome, tmp_path: Path) -> None:
    cli(home, "start", str(write_case(tmp_path)))
    visited = _visited_line(cli(home, "graph", "--execution", "CASE-1001").out)
    # No Succeed state: the last task ends the execution.
    assert visited == ["ReserveStock", "RefundPayment", "CreateShipment"]
    assert "ReleaseReservation" not in visited


def test_graph_without_an_execution_is_unchanged(home: StateHome) -> None:
    result = cli(home, "graph")
    assert result.code == 0
    assert " visited" not in "\n".join(
        line for line in result.out.splitlines() if not line.strip().startswith("classDef")
    )
