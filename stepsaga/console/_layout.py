"""Where each state of a saga's graph goes in the console's SVG.

The graph is ``stepsaga.workflow._graph.build_graph`` (what ``stepsaga graph --execution``
draws), so the console shows the same states, roles and edge kinds; only the geometry is
computed here. A small layered layout, because no maintained pure-Python layout library
ships in a wheel (Graphviz is a system binary): edges that go back to a state on the
current path (retries, decisions looping back) are set aside, the remaining DAG is ranked
by longest path from ``StartAt``, and each rank is ordered by the mean position of its
predecessors. Back edges are drawn as arcs on the right.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from stepsaga.workflow._graph import EdgeKind, Role, StateGraph, Visited

_LANE = {Role.RECONCILIATION: 0, Role.FORWARD: 1, Role.TERMINAL: 1, Role.COMPENSATION: 2}
NODE_HEIGHT = 44
RANK_GAP = 46
NODE_GAP = 28
MARGIN = 24
CHAR_WIDTH = 7.2
MIN_WIDTH = 120


@dataclass(frozen=True)
class PlacedNode:
    name: str
    detail: str
    role: Role
    type: str
    x: float
    y: float
    width: float
    height: float
    visited: bool

    @property
    def cx(self) -> float:
        return self.x + self.width / 2


@dataclass(frozen=True)
class PlacedEdge:
    source: str
    target: str
    kind: EdgeKind
    label: str
    #: SVG path data (``M … C …``).
    path: str
    label_x: float
    label_y: float
    taken: bool


@dataclass(frozen=True)
class GraphPicture:
    name: str
    width: float
    height: float
    nodes: tuple[PlacedNode, ...]
    edges: tuple[PlacedEdge, ...]


def _back_edges(graph: StateGraph) -> set[tuple[str, str]]:
    """Edges into a state on the DFS stack (cycles), found from ``StartAt`` in
    definition order, so the forward path stays forward."""
    out: dict[str, list[str]] = defaultdict(list)
    for edge in graph.edges:
        out[edge.source].append(edge.target)
    back: set[tuple[str, str]] = set()
    done: set[str] = set()
    on_stack: set[str] = set()

    def visit(node: str) -> None:
        on_stack.add(node)
        for target in out[node]:
            if target in on_stack:
                back.add((node, target))
            elif target not in done:
                visit(target)
        on_stack.discard(node)
        done.add(node)

    visit(graph.start)
    for node in graph.nodes:  # unreachable states still get a place
        if node.name not in done:
            visit(node.name)
    return back


def _ranks(graph: StateGraph, back: set[tuple[str, str]]) -> dict[str, int]:
    rank = {node.name: 0 for node in graph.nodes}
    forward = [(e.source, e.target) for e in graph.edges if (e.source, e.target) not in back]
    for _ in range(len(graph.nodes)):  # longest path: at most |V| relaxations
        changed = False
        for source, target in forward:
            if source != target and rank[target] < rank[source] + 1:
                rank[target] = rank[source] + 1
                changed = True
        if not changed:
            break
    return rank


def _width(name: str, detail: str) -> float:
    return max(MIN_WIDTH, CHAR_WIDTH * max(len(name), len(detail)) + 24)


def layout(graph: StateGraph, visited: Visited | None = None) -> GraphPicture:
    """Positions for every node and a path for every edge; ``visited`` marks the run."""
    seen = visited.states if visited else frozenset()
    taken = visited.transitions if visited else frozenset()
    back = _back_edges(graph)
    rank = _ranks(graph, back)
    rows: dict[int, list[str]] = defaultdict(list)
    for node in graph.nodes:
        rows[rank[node.name]].append(node.name)
    preds: dict[str, list[str]] = defaultdict(list)
    for edge in graph.edges:
        if (edge.source, edge.target) not in back:
            preds[edge.target].append(edge.source)
    order: dict[str, float] = {}
    for r in sorted(rows):
        for index, name in enumerate(rows[r]):
            above = [order[p] for p in preds[name] if p in order]
            order[name] = sum(above) / len(above) if above else float(index)
        rows[r].sort(key=lambda n: order[n])
        for index, name in enumerate(rows[r]):
            order[name] = index + order[name] / 1000  # keep ties in predecessor order
    info = {node.name: node for node in graph.nodes}
    widths = {n.name: _width(n.name, n.detail) for n in graph.nodes}
    # Lanes: reconciliation on the left, the forward path (and the ends) in the middle,
    # compensation on the right; a lane is as wide as its widest rank.
    lane_of = {n.name: _LANE[n.role] for n in graph.nodes}
    lane_width = [0.0, 0.0, 0.0]
    for names in rows.values():
        for lane in range(3):
            members = [n for n in names if lane_of[n] == lane]
            used = sum(widths[n] for n in members) + NODE_GAP * max(0, len(members) - 1)
            lane_width[lane] = max(lane_width[lane], used)
    lane_x = [MARGIN, MARGIN + lane_width[0] + 3 * NODE_GAP, 0.0]
    lane_x[2] = lane_x[1] + lane_width[1] + 3 * NODE_GAP
    total = lane_x[2] + lane_width[2] + MARGIN + 120  # room for the arcs on the right
    placed: dict[str, PlacedNode] = {}
    for r, names in rows.items():
        y = MARGIN + r * (NODE_HEIGHT + RANK_GAP)
        for lane in range(3):
            members = [n for n in names if lane_of[n] == lane]
            used = sum(widths[n] for n in members) + NODE_GAP * max(0, len(members) - 1)
            # the middle lane centred, the left one flush right, the right one flush left
            x = lane_x[lane] + (lane_width[lane] - used) * (1.0, 0.5, 0.0)[lane]
            for name in members:
                node = info[name]
                placed[name] = PlacedNode(
                    name,
                    node.detail,
                    node.role,
                    node.type,
                    x,
                    y,
                    widths[name],
                    NODE_HEIGHT,
                    name in seen,
                )
                x += widths[name] + NODE_GAP
    height = MARGIN * 2 + (max(rows, default=0) + 1) * (NODE_HEIGHT + RANK_GAP) - RANK_GAP
    edges = []
    for n, edge in enumerate(graph.edges):
        a, b = placed[edge.source], placed[edge.target]
        if (edge.source, edge.target) in back or rank[edge.target] <= rank[edge.source]:
            path, lx, ly = _arc(a, b, n)
        else:
            path, lx, ly = _down(a, b)
        edges.append(
            PlacedEdge(
                edge.source,
                edge.target,
                edge.kind,
                edge.label,
                path,
                lx,
                ly,
                (edge.source, edge.target) in taken,
            )
        )
    return GraphPicture(graph.name, total, height, tuple(placed.values()), tuple(edges))


def _down(a: PlacedNode, b: PlacedNode) -> tuple[str, float, float]:
    x1, y1 = a.cx, a.y + a.height
    x2, y2 = b.cx, b.y
    mid = (y1 + y2) / 2
    path = f"M {x1:.1f} {y1:.1f} C {x1:.1f} {mid:.1f}, {x2:.1f} {mid:.1f}, {x2:.1f} {y2:.1f}"
    return path, (x1 + x2) / 2, mid


def _arc(a: PlacedNode, b: PlacedNode, n: int) -> tuple[str, float, float]:
    """From ``a``'s right side back up (or across) to ``b``'s right side."""
    x1, y1 = a.x + a.width, a.y + a.height / 2 + 6
    x2, y2 = b.x + b.width, b.y + b.height / 2 - 6
    bulge = max(x1, x2) + 40 + (n % 3) * 14
    path = f"M {x1:.1f} {y1:.1f} C {bulge:.1f} {y1:.1f}, {bulge:.1f} {y2:.1f}, {x2:.1f} {y2:.1f}"
    return path, bulge - 10, (y1 + y2) / 2
