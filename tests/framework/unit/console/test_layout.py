"""The graph's geometry: every state of ``build_graph`` placed once, none overlapping, the
run's states and transitions marked — for the reference saga and for generated graphs."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from stepsaga.console._layout import GraphPicture, layout
from stepsaga.workflow._compiler import compile
from stepsaga.workflow._graph import Edge, EdgeKind, Node, Role, StateGraph, Visited, build_graph
from workflows.replacement_order import saga


def _overlaps(picture: GraphPicture) -> list[tuple[str, str]]:
    found = []
    nodes = list(picture.nodes)
    for i, a in enumerate(nodes):
        for b in nodes[i + 1 :]:
            if (
                a.x < b.x + b.width
                and b.x < a.x + a.width
                and a.y < b.y + b.height
                and b.y < a.y + a.height
            ):
                found.append((a.name, b.name))
    return found


def test_the_reference_saga_is_drawn_whole_with_the_path_marked() -> None:
    graph = build_graph(compile(saga), saga.name)
    path = ["ReserveStock", "RefundPayment", "CreateShipment"]
    picture = layout(graph, Visited.from_path(path))
    assert sorted(n.name for n in picture.nodes) == sorted(n.name for n in graph.nodes)
    assert len(picture.edges) == len(graph.edges)
    assert {n.name for n in picture.nodes if n.visited} == set(path)
    taken = {(e.source, e.target) for e in picture.edges if e.taken}
    assert taken == {
        ("ReserveStock", "RefundPayment"),
        ("RefundPayment", "CreateShipment"),
    }
    assert _overlaps(picture) == []
    by_name = {n.name: n for n in picture.nodes}
    # the forward path reads top to bottom
    assert [by_name[n].y for n in path] == sorted(by_name[n].y for n in path)
    for node in picture.nodes:
        assert node.x >= 0
        assert node.x + node.width <= picture.width
        assert node.y >= 0
        assert node.y + node.height <= picture.height


_ROLES = st.sampled_from(list(Role))


@st.composite
def graphs(draw: st.DrawFn) -> StateGraph:
    count = draw(st.integers(1, 14))
    names = [f"S{i}" for i in range(count)]
    nodes = tuple(Node(n, "Task", draw(_ROLES), "x" * draw(st.integers(0, 30))) for n in names)
    pairs = draw(st.lists(st.tuples(st.sampled_from(names), st.sampled_from(names)), max_size=30))
    edges = tuple(Edge(a, b, EdgeKind.FORWARD, "") for a, b in pairs)
    return StateGraph("g", names[0], nodes, edges)


@given(graphs())
def test_any_graph_gets_every_node_placed_without_overlap(graph: StateGraph) -> None:
    picture = layout(graph)
    assert sorted(n.name for n in picture.nodes) == sorted(n.name for n in graph.nodes)
    assert len(picture.edges) == len(graph.edges)
    assert _overlaps(picture) == []
    assert all(e.path.startswith("M ") for e in picture.edges)


@st.composite
def grouped_graphs(draw: st.DrawFn) -> StateGraph:
    """Graphs whose states sit in groups (a tree: each group is an earlier state), with
    edges anywhere, as ``build_graph`` makes for Parallel and Map states."""
    count = draw(st.integers(1, 12))
    names = [f"S{i}" for i in range(count)]
    nodes = []
    for i, name in enumerate(names):
        group = draw(st.one_of(st.none(), st.sampled_from(names[:i]))) if i else None
        nodes.append(Node(name, "Task", draw(_ROLES), "x" * draw(st.integers(0, 20)), group))
    pairs = draw(st.lists(st.tuples(st.sampled_from(names), st.sampled_from(names)), max_size=24))
    edges = tuple(Edge(a, b, EdgeKind.FORWARD, "") for a, b in pairs)
    return StateGraph("g", names[0], tuple(nodes), edges)


@given(grouped_graphs())
def test_groups_hold_their_states_and_nothing_else_overlaps(graph: StateGraph) -> None:
    picture = layout(graph)
    placed = {n.name: n for n in picture.nodes}
    assert sorted(placed) == sorted(n.name for n in graph.nodes)
    assert len(picture.edges) == len(graph.edges)
    group = {n.name: n.group for n in graph.nodes}

    def ancestors(name: str) -> set[str]:
        found: set[str] = set()
        while (up := group[name]) is not None:
            found.add(up)
            name = up
        return found

    for node in graph.nodes:
        inner = placed[node.name]
        for up in ancestors(node.name):
            box = placed[up]
            assert box.container
            assert box.x <= inner.x
            assert inner.x + inner.width <= box.x + box.width
            assert box.y <= inner.y
            assert inner.y + inner.height <= box.y + box.height
    related = {(a, b) for a in placed for b in ancestors(a)} | {
        (b, a) for a in placed for b in ancestors(a)
    }
    assert [pair for pair in _overlaps(picture) if pair not in related] == []
    for drawn in picture.nodes:
        assert drawn.x >= 0
        assert drawn.x + drawn.width <= picture.width
        assert drawn.y >= 0
        assert drawn.y + drawn.height <= picture.height
