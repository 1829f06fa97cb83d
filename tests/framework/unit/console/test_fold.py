"""The primary graph is the saga's own steps: every generated reconciliation state folded
into the step it serves, the run's path mapped onto what is left."""

from __future__ import annotations

from stepsaga.console._fold import fold
from stepsaga.console._layout import layout
from stepsaga.workflow._compiler import compile
from stepsaga.workflow._graph import Role, Visited, build_graph
from workflows.replacement_order import saga


def test_the_reference_saga_folds_to_its_steps_compensations_and_ends() -> None:
    full = build_graph(compile(saga), saga.name)
    folded = fold(full)
    kept = {n.name: n for n in folded.graph.nodes}
    assert not [n for n in kept.values() if n.role is Role.RECONCILIATION]
    assert {"ReserveStock", "RefundPayment", "CreateShipment", "ReleaseReservation"} <= set(kept)
    assert folded.owner["ReconcileCreateShipment"] == "CreateShipment"
    assert folded.owner["AwaitDecisionCreateShipment"] == "CreateShipment"
    assert "+3 folded" in kept["CreateShipment"].detail
    assert all(e.source in kept and e.target in kept for e in folded.graph.edges)
    assert all(e.source != e.target for e in folded.graph.edges)
    # a run that waited in CreateShipment's reconciliation is drawn on CreateShipment
    path = ["ReserveStock", "RefundPayment", "CreateShipment", "ReconcileCreateShipment"]
    visited = folded.visited(Visited.from_path(path))
    assert visited.states == {"ReserveStock", "RefundPayment", "CreateShipment"}
    assert ("CreateShipment", "CreateShipment") not in visited.transitions
    # the forward line is a straight column: each step directly below the one before
    picture = layout(folded.graph, visited)
    placed = {n.name: n for n in picture.nodes}
    column = [placed[s] for s in ["ReserveStock", "RefundPayment", "CreateShipment"]]
    assert len({round(n.cx) for n in column}) == 1
    assert [n.y for n in column] == sorted(n.y for n in column)
