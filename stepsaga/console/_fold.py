"""The saga's own steps as the primary graph: the states the compiler generates for
reconciliation (``Reconcile…``, ``…Decision``, ``AwaitDecision…``, ``Record…Failure``) and
for routing (the ``Choice`` and ``Pass`` states around groups and compensations) are
folded into the step they serve, so the picture is the saga a person wrote — a line, its
branches, its compensations — instead of a web of crossing edges. The full compiled
graph stays one click away (the execution page's "every state" view).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from stepsaga.workflow._graph import Edge, Node, Role, StateGraph, Visited


@dataclass(frozen=True)
class Folded:
    graph: StateGraph
    #: Every state of the full graph -> the state that stands for it in ``graph``.
    owner: Mapping[str, str]

    def visited(self, full: Visited) -> Visited:
        """``full``'s states and transitions as the folded graph shows them."""
        states = frozenset(self.owner.get(s, s) for s in full.states)
        moves = {(self.owner.get(a, a), self.owner.get(b, b)) for a, b in full.transitions}
        return Visited(states, frozenset((a, b) for a, b in moves if a != b))


#: States the compiler adds around steps (routing, bookkeeping): folded like reconciliation.
_GENERATED_TYPES = frozenset({"Pass", "Choice"})


def _is_step(node: Node) -> bool:
    """A state a person reading the saga would name: a task, a group, an end."""
    if node.role is Role.TERMINAL:
        return True
    return node.role is not Role.RECONCILIATION and node.type not in _GENERATED_TYPES


def fold(graph: StateGraph) -> Folded:
    """Each generated state (reconciliation, routing choices, bookkeeping passes) folded
    into the nearest step that leads to it; edges between the same two steps merged (the
    first one's kind and label kept)."""
    owner = {n.name: n.name for n in graph.nodes if _is_step(n)}
    changed = True
    while changed:  # owners spread along the edges, one reconciliation state at a time
        changed = False
        for edge in graph.edges:
            if edge.target not in owner and edge.source in owner:
                owner[edge.target] = owner[edge.source]
                changed = True
    for node in graph.nodes:  # unreachable from any step: keep it as it is
        owner.setdefault(node.name, node.name)
    folded_into: dict[str, int] = {}
    for name, kept in owner.items():
        if name != kept:
            folded_into[kept] = folded_into.get(kept, 0) + 1
    nodes = tuple(
        replace(n, detail=f"{n.detail} · +{folded_into[n.name]} folded")
        if n.name in folded_into
        else n
        for n in graph.nodes
        if owner[n.name] == n.name
    )
    edges: dict[tuple[str, str], Edge] = {}
    for edge in graph.edges:
        source, target = owner[edge.source], owner[edge.target]
        if source != target and (source, target) not in edges:
            label = edge.label if owner[edge.source] == edge.source else ""
            edges[(source, target)] = replace(edge, source=source, target=target, label=label)
    return Folded(replace(graph, nodes=nodes, edges=tuple(edges.values())), owner)
