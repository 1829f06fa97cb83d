"""Pictures: compensation and reconciliation edges are drawn differently, runs highlighted."""

from __future__ import annotations

from typing import Any

from stepsaga.workflow._graph import (
    EdgeKind,
    GraphFormat,
    Role,
    Visited,
    build_graph,
    draw,
    to_dot,
    to_mermaid,
)


def kinds(definition: dict[str, Any]) -> dict[tuple[str, str], set[EdgeKind]]:
    found: dict[tuple[str, str], set[EdgeKind]] = {}
    for edge in build_graph(definition).edges:
        found.setdefault((edge.source, edge.target), set()).add(edge.kind)
    return found


def test_edges_are_classified(definition: dict[str, Any]) -> None:
    edges = kinds(definition)
    assert edges["ReserveStock", "RefundPayment"] == {EdgeKind.FORWARD}
    assert edges["RefundPayment", "CreateShipment"] == {EdgeKind.FORWARD}
    assert edges["CreateShipment", "EscalateRefundPayment"] == {EdgeKind.COMPENSATION}
    assert edges["EscalateRefundPayment", "ReleaseReservation"] == {EdgeKind.COMPENSATION}
    assert edges["ReleaseReservation", "Compensated"] == {EdgeKind.COMPENSATION}
    assert edges["ReserveStock", "Compensated"] == {EdgeKind.COMPENSATION}
    assert edges["CreateShipment", "ReconcileCreateShipment"] == {EdgeKind.RECONCILIATION}
    assert edges["CreateShipmentDecision", "CreateShipment"] == {EdgeKind.RECONCILIATION}
    assert edges["AwaitDecisionCreateShipment", "CreateShipmentDecision"] == {
        EdgeKind.RECONCILIATION
    }
    assert edges["ReleaseReservation", "RecordReleaseReservationFailure"] == {
        EdgeKind.RECONCILIATION
    }
    for target in ("ReleaseReservation", "Compensated", "CompensationFailed"):
        assert edges["ReleaseReservationDecision", target] == {EdgeKind.RECONCILIATION}


def test_node_roles(definition: dict[str, Any]) -> None:
    roles = {node.name: node.role for node in build_graph(definition).nodes}
    assert roles["ReserveStock"] is Role.FORWARD
    assert roles["ReleaseReservation"] is Role.COMPENSATION
    assert roles["EscalateRefundPayment"] is Role.COMPENSATION
    assert roles["ReserveStockDecision"] is Role.RECONCILIATION
    assert roles["AwaitDecisionReserveStock"] is Role.RECONCILIATION
    assert roles["ReleaseReservationDecision"] is Role.RECONCILIATION
    assert roles["Compensated"] is Role.TERMINAL


def test_mermaid_draws_each_kind_with_its_own_arrow(definition: dict[str, Any]) -> None:
    text = to_mermaid(build_graph(definition, "replacement-order"))
    assert text.startswith("flowchart TD\n")
    assert "    ReserveStock --> RefundPayment\n" in text
    assert "    CreateShipment -.->|rejected| EscalateRefundPayment\n" in text
    assert "    CreateShipment ==>|uncertain| ReconcileCreateShipment\n" in text
    assert "    CreateShipmentDecision ==>|applied| CreateShipment\n" in text
    assert "    ReleaseReservation ==>|failed| RecordReleaseReservationFailure\n" in text
    assert 'ReserveStockDecision{"ReserveStockDecision' in text
    assert "classDef end" not in text  # "end" is a Mermaid keyword
    assert "visited" not in text.split("classDef visited")[1]


def test_dot_draws_each_kind_with_its_own_style(definition: dict[str, Any]) -> None:
    text = to_dot(build_graph(definition, "replacement-order"))
    assert text.startswith('digraph "replacement-order" {')
    assert '"ReserveStock" -> "RefundPayment" [style=solid' in text
    assert '"CreateShipment" -> "EscalateRefundPayment" [style=dashed' in text
    assert '"CreateShipment" -> "ReconcileCreateShipment" [style=bold' in text
    assert '"ReserveStockDecision" [label="ReserveStockDecision\\nchoice", shape=diamond' in text
    assert text.rstrip().endswith("}")


def test_a_run_is_highlighted(definition: dict[str, Any]) -> None:
    visited = Visited.from_path(["ReserveStock", "RefundPayment", "CreateShipment"])
    assert visited.transitions == {
        ("ReserveStock", "RefundPayment"),
        ("RefundPayment", "CreateShipment"),
    }
    mermaid = draw(definition, GraphFormat.mermaid, visited=visited)
    assert "    class ReserveStock,RefundPayment,CreateShipment visited\n" in mermaid
    assert "    linkStyle 0,8 stroke:#2f855a,stroke-width:4px\n" in mermaid
    dot = draw(definition, GraphFormat.dot, visited=visited)
    assert '"ReserveStock" -> "RefundPayment" [style=solid, color="#2f855a", penwidth=3];' in dot
    assert '"CreateShipment" [label="CreateShipment\\nphysical", shape=box' in dot
    assert dot.count("penwidth=3") == 5  # three states, two transitions


def test_any_definition_can_be_drawn_even_with_awkward_names() -> None:
    definition = {
        "StartAt": "end",
        "States": {
            "end": {"Type": "Pass", "Next": 'say "hi"'},
            'say "hi"': {"Type": "Succeed"},
        },
    }
    mermaid = draw(definition)
    assert "state_end --> say__hi_" in mermaid
    assert "#quot;" in mermaid
    dot = draw(definition, GraphFormat.dot)
    assert '"say \\"hi\\""' in dot


def test_branches_and_items_are_drawn_inside_their_state() -> None:
    from stepsaga.workflow import compile
    from workflows.multi_warehouse import saga

    graph = build_graph(compile(saga))
    group = {node.name: node.group for node in graph.nodes}
    assert group["ReserveLine"] == "ReserveLines"
    assert group["CreateShipment"] == "RefundAndShip"
    assert group["ReleaseLine"] == "UndoReserveLineItems"
    assert group["ReserveLines"] is None
    labels = {(e.source, e.target): e.label for e in graph.edges}
    assert labels["ReserveLines", "ReserveLine"] == "each item"
    assert labels["RefundAndShip", "RefundPayment"] == "branch 1"
    assert labels["RefundAndShip", "CreateShipment"] == "branch 2"

    mermaid = to_mermaid(graph)
    assert mermaid.count("subgraph ") == mermaid.count("\n    end\n") == 3
    dot = to_dot(graph)
    assert dot.count("subgraph ") == 3
    assert dot.count("{") == dot.count("}")


def test_an_execution_of_the_layout_with_prepare_highlights_on_todays_graph(
    definition: dict[str, Any],
) -> None:
    """The console and ``stepsaga graph`` draw today's machine; an older execution's states
    that it no longer has (``Prepare``, ``Completed``) are left out, not an error."""
    old = ["Prepare", "ReserveStock", "RefundPayment", "CreateShipment", "Completed"]
    mermaid = draw(definition, GraphFormat.mermaid, visited=Visited.from_path(old))
    assert "    class ReserveStock,RefundPayment,CreateShipment visited\n" in mermaid
    assert "Prepare" not in mermaid
