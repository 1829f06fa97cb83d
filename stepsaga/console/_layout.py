"""Where each state of a saga's graph goes in the console's SVG.

The graph is ``stepsaga.workflow._graph.build_graph`` (what ``stepsaga graph --execution``
draws), so the console shows the same states, roles and edge kinds; only the geometry is
computed here. A small layered layout, because no maintained pure-Python layout library
ships in a wheel (Graphviz is a system binary):

* **Groups** (a ``Parallel``'s branches, a ``Map``'s per-item steps) are boxes that hold
  their states, laid out inside by the same rules, so branches stand side by side under
  their group's name; the group's edges into its states start at its header, the states'
  edges back to it end at its bottom, and an edge between states of different groups is
  drawn between the groups that hold them (at the level where they are siblings).
* **Each level** (the top, or one group's inside): edges that go back to a state on the
  current path (retries, decisions looping back) are set aside, the remaining DAG is ranked
  by longest path from its first state, and each rank is ordered by the mean position of
  its predecessors, in three lanes (reconciliation left, forward middle, compensation
  right). An edge to the next rank is a curve; one that skips ranks runs down a gutter on
  the left (longer ones further out, so nested ones never cross); back edges, and a skip
  that would cross one already on the left, run up or down a gutter on the right; a
  gutter's ends stand at that side of their rank.
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
    #: A group's box (its states are drawn inside it).
    container: bool = False

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


#: A group box's padding around its states, and the room its name takes above them.
PAD = 14
HEADER = NODE_HEIGHT + 8
#: Space between two arcs in a gutter.
TRACK = 14


def _back_edges(members: list[str], pairs: list[tuple[str, str]]) -> set[tuple[str, str]]:
    """Edges into a state on the DFS stack (cycles), found from the first member in
    definition order, so the forward path stays forward."""
    out: dict[str, list[str]] = defaultdict(list)
    for source, target in pairs:
        out[source].append(target)
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

    for node in members:  # the first is the level's start; unreachable ones get a place too
        if node not in done:
            visit(node)
    return back


def _ranks(members: list[str], forward: list[tuple[str, str]]) -> dict[str, int]:
    rank = dict.fromkeys(members, 0)
    for _ in range(len(members)):  # longest path: at most |V| relaxations
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


@dataclass
class _Box:
    """A node while it is placed: size first (inside out), then position (outside in)."""

    name: str
    width: float
    height: float
    x: float = 0.0
    y: float = 0.0

    @property
    def cx(self) -> float:
        return self.x + self.width / 2


@dataclass
class _Level:
    """One level's arrangement, relative to its own top-left corner."""

    width: float
    height: float
    #: member -> (x, y) relative to the level.
    spots: dict[str, tuple[float, float]]
    rank: dict[str, int]
    back: set[tuple[str, str]]
    #: (source, target) -> track index, for the skipping edges in each gutter.
    left: dict[tuple[str, str], int]
    right: dict[tuple[str, str], int]
    left_width: float
    #: Where the right gutter starts.
    content: float


class _Layout:
    def __init__(self, graph: StateGraph) -> None:
        self.graph = graph
        self.info = {n.name: n for n in graph.nodes}
        self.parent = {
            n.name: n.group if n.group in self.info and n.group != n.name else None
            for n in graph.nodes
        }
        self.members: dict[str | None, list[str]] = defaultdict(list)
        for node in graph.nodes:
            self.members[self.parent[node.name]].append(node.name)
        if graph.start in self.members[None]:  # the level's start first
            self.members[None].remove(graph.start)
            self.members[None].insert(0, graph.start)
        # each edge at the level where its ends (or the groups holding them) are siblings
        self.level_pairs: dict[str | None, list[tuple[str, str]]] = defaultdict(list)
        self.lifted: dict[int, tuple[str, str] | None] = {}
        for n, edge in enumerate(graph.edges):
            pair = self._lift(edge.source, edge.target)
            self.lifted[n] = pair
            if pair is not None:
                self.level_pairs[self.parent[pair[0]]].append(pair)
        self.boxes: dict[str, _Box] = {}
        self.levels: dict[str | None, _Level] = {}

    def _ancestry(self, name: str) -> list[str]:
        chain = [name]
        while (up := self.parent[chain[-1]]) is not None and up not in chain:
            chain.append(up)
        return chain

    def _lift(self, source: str, target: str) -> tuple[str, str] | None:
        """The siblings standing for ``source`` and ``target``; ``None`` when one holds the
        other (a group's edge into its state, a state's back to its group)."""
        if source == target:
            return (source, target)
        ups, downs = self._ancestry(source), self._ancestry(target)
        if target in ups or source in downs:
            return None
        for a in ups:
            for b in downs:
                if self.parent[a] == self.parent[b]:
                    return (a, b)
        return None

    # --- sizes, inside out -----------------------------------------------------------------

    def size(self, name: str) -> _Box:
        node = self.info[name]
        own = _width(node.name, node.detail)
        if self.members.get(name):
            inner = self.arrange(name)
            box = _Box(name, max(own, inner.width + 2 * PAD), HEADER + inner.height + PAD)
        else:
            box = _Box(name, own, NODE_HEIGHT)
        self.boxes[name] = box
        return box

    def arrange(self, level: str | None) -> _Level:
        members = self.members[level]
        boxes = {m: self.size(m) for m in members}
        pairs = self.level_pairs[level]
        back = _back_edges(members, pairs)
        forward = [p for p in pairs if p not in back]
        rank = _ranks(members, forward)
        rows: dict[int, list[str]] = defaultdict(list)
        for name in members:
            rows[rank[name]].append(name)
        # skipping edges: left gutter unless one there overlaps it partly, then right
        left: dict[tuple[str, str], int] = {}
        right: dict[tuple[str, str], int] = {}
        spans = sorted(
            {p for p in pairs if p in back or rank[p[1]] - rank[p[0]] != 1},
            key=lambda p: -abs(rank[p[1]] - rank[p[0]]),
        )
        for pair in spans:
            low, high = sorted((rank[pair[0]], rank[pair[1]]))
            downward = pair not in back and rank[pair[1]] > rank[pair[0]]
            crossing = any(_partly(low, high, *sorted((rank[a], rank[b]))) for a, b in left)
            if downward and not crossing:
                left[pair] = len(left)
            else:
                right[pair] = len(right)
        # order each rank: the mean place of its predecessors; left-gutter ends first
        preds: dict[str, list[str]] = defaultdict(list)
        for source, target in forward:
            preds[target].append(source)
        left_ends = {n for pair in left for n in pair}
        right_ends = {n for pair in right for n in pair}
        order: dict[str, float] = {}
        for r in sorted(rows):
            for index, name in enumerate(rows[r]):
                above = [order[p] for p in preds[name] if p in order]
                order[name] = sum(above) / len(above) if above else float(index)
            # a gutter's ends stand next to it, so its arcs pass no other node
            rows[r].sort(key=lambda n: (n not in left_ends, n in right_ends, order[n]))
            for index, name in enumerate(rows[r]):
                order[name] = index + order[name] / 1000  # keep ties in predecessor order
        lane_of = {m: _LANE[self.info[m].role] for m in members}
        lane_width = [0.0, 0.0, 0.0]
        for names in rows.values():
            for lane in range(3):
                used = _used([boxes[n] for n in names if lane_of[n] == lane])
                lane_width[lane] = max(lane_width[lane], used)
        left_width = len(left) * TRACK + (TRACK if left else 0)
        lane_x = [left_width, left_width + lane_width[0], 0.0]
        if lane_width[0]:
            lane_x[1] += 3 * NODE_GAP
        lane_x[2] = lane_x[1] + lane_width[1] + (3 * NODE_GAP if lane_width[2] else 0)
        content = lane_x[2] + lane_width[2]
        width = content + len(right) * TRACK + (TRACK if right else 0)
        spots: dict[str, tuple[float, float]] = {}
        y = 0.0
        for r in sorted(rows):
            names = rows[r]
            for lane in range(3):
                chosen = [n for n in names if lane_of[n] == lane]
                used = _used([boxes[n] for n in chosen])
                x = lane_x[lane] + (lane_width[lane] - used) * (1.0, 0.5, 0.0)[lane]
                for name in chosen:
                    spots[name] = (x, y)
                    x += boxes[name].width + NODE_GAP
            y += max(boxes[n].height for n in names) + RANK_GAP
        height = max(0.0, y - RANK_GAP)
        made = _Level(width, height, spots, rank, back, left, right, left_width, content)
        self.levels[level] = made
        return made

    # --- positions, outside in -------------------------------------------------------------

    def place(self, level: str | None, x0: float, y0: float) -> None:
        arranged = self.levels[level]
        for name, (x, y) in arranged.spots.items():
            box = self.boxes[name]
            box.x, box.y = x0 + x, y0 + y
            if self.members.get(name):
                inner = self.levels[name]
                self.place(name, box.x + (box.width - inner.width) / 2, box.y + HEADER)

    def origin(self, level: str | None) -> float:
        """The x where ``level``'s left gutter starts."""
        if level is None:
            return MARGIN
        box = self.boxes[level]
        return box.x + (box.width - self.levels[level].width) / 2


def _partly(a0: int, a1: int, b0: int, b1: int) -> bool:
    """Two rank intervals overlap without one holding the other (their arcs would cross)."""
    return a0 < b0 < a1 < b1 or b0 < a0 < b1 < a1


def _used(boxes: list[_Box]) -> float:
    return sum(b.width for b in boxes) + NODE_GAP * max(0, len(boxes) - 1)


def layout(graph: StateGraph, visited: Visited | None = None) -> GraphPicture:
    """Positions for every node and a path for every edge; ``visited`` marks the run."""
    seen = visited.states if visited else frozenset()
    taken = visited.transitions if visited else frozenset()
    work = _Layout(graph)
    top = work.arrange(None)
    work.place(None, MARGIN, MARGIN)
    width = top.width + 2 * MARGIN
    height = top.height + 2 * MARGIN
    boxes = work.boxes

    def depth(name: str) -> int:
        return len(work._ancestry(name))

    placed = tuple(
        PlacedNode(
            n.name,
            n.detail,
            n.role,
            n.type,
            boxes[n.name].x,
            boxes[n.name].y,
            boxes[n.name].width,
            boxes[n.name].height,
            n.name in seen,
            container=bool(work.members.get(n.name)),
        )
        for n in sorted(graph.nodes, key=lambda n: depth(n.name))  # groups under their states
    )
    # gutter ends: per node, the arcs leaving (outer first, higher) and arriving (outer last)
    edges = []
    for n, edge in enumerate(graph.edges):
        a, b = boxes[edge.source], boxes[edge.target]
        pair = work.lifted[n]
        if pair is None:
            path, lx, ly = _inside(a, b, edge.source in work._ancestry(edge.target))
        else:
            level = work.levels[work.parent[pair[0]]]
            sa, sb = boxes[pair[0]], boxes[pair[1]]
            if pair in level.left:
                path, lx, ly = _left(sa, sb, level, pair, work.origin(work.parent[pair[0]]))
            elif pair in level.right:
                path, lx, ly = _right(sa, sb, level, pair, work.origin(work.parent[pair[0]]))
            else:
                path, lx, ly = _down(sa, sb)
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
    return GraphPicture(graph.name, width, height, placed, tuple(edges))


def _down(a: _Box, b: _Box) -> tuple[str, float, float]:
    x1, y1 = a.cx, a.y + a.height
    x2, y2 = b.cx, b.y
    mid = (y1 + y2) / 2
    path = f"M {x1:.1f} {y1:.1f} C {x1:.1f} {mid:.1f}, {x2:.1f} {mid:.1f}, {x2:.1f} {y2:.1f}"
    return path, (x1 + x2) / 2, mid


def _inside(a: _Box, b: _Box, entering: bool) -> tuple[str, float, float]:
    """A group's edge into one of its states (from under its name), or a state's edge back
    to its group (down to the group's bottom edge)."""
    if entering:  # a is the group
        x1, y1 = b.cx, a.y + NODE_HEIGHT
        x2, y2 = b.cx, b.y
    else:  # b is the group (or holds a's group)
        x1, y1 = a.cx, a.y + a.height
        x2, y2 = a.cx, b.y + b.height
    return f"M {x1:.1f} {y1:.1f} L {x2:.1f} {y2:.1f}", x1 + 4, (y1 + y2) / 2


def _offset(
    level: _Level, pair: tuple[str, str], end: int, tracks: dict[tuple[str, str], int]
) -> float:
    """Where on its node's side an arc leaves (``end`` 0) or arrives (1): among the arcs at
    that node, outer ones leave higher and arrive lower, so they never cross inner ones."""
    node = pair[end]
    mine = sorted((p for p in tracks if p[end] == node), key=lambda p: tracks[p])
    index = mine.index(pair)
    step = 8.0
    if end == 0:
        return 10 + index * step
    return NODE_HEIGHT - 10 - index * step


def _left(
    a: _Box, b: _Box, level: _Level, pair: tuple[str, str], origin: float
) -> tuple[str, float, float]:
    """Down the left gutter: the outermost track for the longest skip."""
    track = level.left[pair]
    x = origin + TRACK / 2 + track * TRACK
    y1 = a.y + _offset(level, pair, 0, level.left)
    y2 = b.y + _offset(level, pair, 1, level.left)
    path = f"M {a.x:.1f} {y1:.1f} L {x:.1f} {y1:.1f} L {x:.1f} {y2:.1f} L {b.x:.1f} {y2:.1f}"
    return path, x + 4, (y1 + y2) / 2


def _right(
    a: _Box, b: _Box, level: _Level, pair: tuple[str, str], origin: float
) -> tuple[str, float, float]:
    """Back up (or across, or down) the right gutter, right of every node of the level."""
    x = origin + level.content + TRACK / 2 + level.right[pair] * TRACK
    y1 = a.y + _offset(level, pair, 0, level.right)
    y2 = b.y + _offset(level, pair, 1, level.right)
    x1, x2 = a.x + a.width, b.x + b.width
    path = f"M {x1:.1f} {y1:.1f} L {x:.1f} {y1:.1f} L {x:.1f} {y2:.1f} L {x2:.1f} {y2:.1f}"
    return path, x - 4, (y1 + y2) / 2
