"""Pictures of a compiled state machine: Mermaid or Graphviz DOT.

The graph is read from the ASL definition itself (not from the saga), so it draws exactly
what runs. Each state gets a role from its task payload's ``kind`` — forward steps,
compensation (compensations and escalations on the way back) and reconciliation
(reconcile, await decision, record a failed compensation) — and each edge a kind drawn
visibly differently: forward solid, compensation dotted/dashed, reconciliation thick.

A ``Parallel`` or ``Map`` state draws its branches / item processor inside it (a Mermaid
``subgraph``, a DOT cluster), entered by an edge labelled ``branch <n>`` / ``each item``.

Highlighting a run: pass ``Visited`` (the states an execution entered and the transitions
it took) to ``to_mermaid``/``to_dot``/``draw``; ``Visited.from_path`` builds one from the
ordered list of entered states (e.g. from ``…StateEntered`` history events).
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from stepsaga.errors import COMPENSATE, RECONCILE
from stepsaga.errors import names as error_names
from stepsaga.workflow._validate import nested_machines, transitions


class Role(StrEnum):
    FORWARD = "forward"
    COMPENSATION = "compensation"
    RECONCILIATION = "reconciliation"
    TERMINAL = "terminal"


class EdgeKind(StrEnum):
    FORWARD = "forward"
    COMPENSATION = "compensation"
    RECONCILIATION = "reconciliation"


class GraphFormat(StrEnum):
    mermaid = "mermaid"
    dot = "dot"


_ROLE_OF_KIND = {
    "step": Role.FORWARD,
    "compensation": Role.COMPENSATION,
    "escalate": Role.COMPENSATION,
    "reconcile": Role.RECONCILIATION,
    "await_decision": Role.RECONCILIATION,
    "compensation_failed": Role.RECONCILIATION,
}


@dataclass(frozen=True)
class Node:
    name: str
    type: str
    role: Role
    #: A short second line: effect class, ``waits for a person``, the Fail error …
    detail: str
    #: The ``Parallel``/``Map`` state this state runs inside (``None``: the top level).
    group: str | None = None


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    kind: EdgeKind
    label: str


@dataclass(frozen=True)
class StateGraph:
    name: str
    start: str
    nodes: tuple[Node, ...]
    edges: tuple[Edge, ...]


@dataclass(frozen=True)
class Visited:
    """What one execution did: the states it entered and the transitions it took."""

    states: frozenset[str] = frozenset()
    transitions: frozenset[tuple[str, str]] = frozenset()

    @classmethod
    def from_path(cls, entered: Sequence[str]) -> Visited:
        """From states in the order they were entered (consecutive pairs are transitions)."""
        return cls(frozenset(entered), frozenset(itertools.pairwise(entered)))


def _all_states(
    machine: Mapping[str, Any], group: str | None = None
) -> Iterable[tuple[str, Mapping[str, Any], str | None]]:
    """``(name, state, group)`` of every state, nested ones right after their group."""
    for name, state in machine["States"].items():
        yield name, state, group
        for nested in nested_machines(state):
            yield from _all_states(nested, name)


def _entries(state: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(target, label)``: how a ``Parallel``/``Map`` state enters what it runs."""
    machines = nested_machines(state)
    if state.get("Type") == "Map":
        return [(str(m["StartAt"]), "each item") for m in machines]
    return [(str(m["StartAt"]), f"branch {i + 1}") for i, m in enumerate(machines)]


def build_graph(definition: Mapping[str, Any], name: str = "state machine") -> StateGraph:
    found = list(_all_states(definition))
    states: Mapping[str, Any] = {n: s for n, s, _ in found}
    groups = {n: g for n, _, g in found}
    roles = {n: _own_role(s) for n, s in states.items()}
    # A Choice belongs to the path that leads into it (e.g. a reconciliation decision).
    for state_name, state in states.items():
        if state.get("Type") == "Choice":
            sources = [s for s, st in states.items() if state_name in _targets(st)]
            if any(roles[s] is Role.RECONCILIATION for s in sources):
                roles[state_name] = Role.RECONCILIATION
    nodes = tuple(
        Node(n, s.get("Type", "?"), roles[n], _detail(s), groups[n]) for n, s in states.items()
    )
    edges: list[Edge] = []
    for source, state in states.items():
        for target, label in _entries(state):
            edges.append(
                Edge(source, target, _edge_kind(roles[source], roles[target], "", []), label)
            )
        for via, target, label, errors in _edges(state):
            kind = _edge_kind(roles[source], roles.get(target, Role.FORWARD), via, errors)
            edges.append(Edge(source, target, kind, label))
    return StateGraph(name, str(definition["StartAt"]), nodes, tuple(edges))


def _targets(state: Mapping[str, Any]) -> list[str]:
    return [target for _, target in transitions(state)]


def _payload(state: Mapping[str, Any]) -> Any:
    """A Task's ``Payload`` template, in JSONPath (``Parameters``) or JSONata (``Arguments``)."""
    return (state.get("Parameters") or state.get("Arguments") or {}).get("Payload")


def _own_role(state: Mapping[str, Any]) -> Role:
    if state.get("Type") in ("Succeed", "Fail"):
        return Role.TERMINAL
    payload = _payload(state)
    if isinstance(payload, Mapping):
        return _ROLE_OF_KIND.get(str(payload.get("kind")), Role.FORWARD)
    return Role.FORWARD


def _detail(state: Mapping[str, Any]) -> str:
    kind = state.get("Type")
    if kind == "Fail":
        return str(state.get("Error", "failed"))
    if kind == "Succeed":
        return "succeeded"
    if kind == "Task":
        if str(state.get("Resource", "")).endswith(".waitForTaskToken"):
            return "waits for a person"
        payload = _payload(state)
        if isinstance(payload, Mapping):
            if payload.get("kind") in ("step", "compensation") and "effect" in payload:
                return str(payload["effect"])
            return str(payload.get("kind", "task"))
        return "task"
    return str(kind).lower()


def _catch_label(errors: list[str]) -> str:
    if errors == ["States.ALL"]:
        return "failed"
    if set(errors) == set(error_names(COMPENSATE)):
        return "rejected"
    if set(errors) == set(error_names(RECONCILE)):
        return "uncertain"
    return ", ".join(errors)


def _edges(state: Mapping[str, Any]) -> Iterable[tuple[str, str, str, list[str]]]:
    """``(via, target, label, caught errors)`` per way out, in definition order."""
    if isinstance(state.get("Next"), str):
        yield "next", state["Next"], "", []
    for rule in state.get("Choices") or []:
        yield "choice", rule["Next"], _rule_label(rule), []
    if isinstance(state.get("Default"), str):
        yield "default", state["Default"], "otherwise", []
    for catcher in state.get("Catch") or []:
        errors = list(catcher.get("ErrorEquals", []))
        yield "catch", catcher["Next"], _catch_label(errors), errors


def _rule_label(rule: Mapping[str, Any]) -> str:
    if "Condition" in rule:  # JSONata: the compared literal, as StringEquals shows it
        literal = _COMPARED.search(str(rule["Condition"]))
        return literal.group(1) if literal else "condition"
    for key, value in rule.items():
        if key not in ("Variable", "Next"):
            return str(value) if key == "StringEquals" else f"{key} {json.dumps(value)}"
    return "rule"


_COMPARED = re.compile(r"= '([^']*)' %}$")


def _edge_kind(source: Role, target: Role, via: str, errors: list[str]) -> EdgeKind:
    if Role.RECONCILIATION in (source, target):
        return EdgeKind.RECONCILIATION
    if Role.COMPENSATION in (source, target):
        return EdgeKind.COMPENSATION
    if via == "catch":
        reconcile = set(error_names(RECONCILE))
        if errors and set(errors) <= reconcile:
            return EdgeKind.RECONCILIATION
        return EdgeKind.COMPENSATION
    return EdgeKind.FORWARD


# --- Mermaid ---------------------------------------------------------------------------

_MERMAID_ARROW = {
    EdgeKind.FORWARD: ("-->", "-->|{}|"),
    EdgeKind.COMPENSATION: ("-.->", "-.->|{}|"),
    EdgeKind.RECONCILIATION: ("==>", "==>|{}|"),
}
_COLORS = {
    Role.FORWARD: ("#e8f1fb", "#2b6cb0"),
    Role.COMPENSATION: ("#fff4e5", "#c05621"),
    Role.RECONCILIATION: ("#fdecef", "#b83280"),
    Role.TERMINAL: ("#f2f2f2", "#4a5568"),
}
_EDGE_COLORS = {
    EdgeKind.FORWARD: "#2b6cb0",
    EdgeKind.COMPENSATION: "#c05621",
    EdgeKind.RECONCILIATION: "#b83280",
}
_VISITED = "#2f855a"
#: Words Mermaid would read as syntax, not as a node id.
_MERMAID_KEYWORDS = {"end", "graph", "subgraph", "flowchart", "class", "classdef", "style"}
_MERMAID_KEYWORDS |= {"click", "default", "linkstyle", "direction"}


def _ids(graph: StateGraph) -> dict[str, str]:
    ids: dict[str, str] = {}
    for node in graph.nodes:
        base = re.sub(r"\W", "_", node.name) or "state"
        if base.lower() in _MERMAID_KEYWORDS:
            base = f"state_{base}"
        candidate, n = base, 1
        while candidate in ids.values():
            n += 1
            candidate = f"{base}_{n}"
        ids[node.name] = candidate
    return ids


def _mermaid_text(text: str) -> str:
    return text.replace('"', "#quot;")


def _mermaid_node(node_id: str, node: Node) -> str:
    label = f"{_mermaid_text(node.name)}<br/><small>{_mermaid_text(node.detail)}</small>"
    if node.type == "Choice":
        return f'{node_id}{{"{label}"}}'
    if node.role is Role.TERMINAL:
        return f'{node_id}(["{label}"])'
    return f'{node_id}["{label}"]'


def _mermaid_nodes(
    graph: StateGraph, ids: Mapping[str, str], group: str | None, indent: str
) -> list[str]:
    """The nodes of ``group`` (a subgraph per Parallel/Map state, inside its parent's)."""
    lines: list[str] = []
    for node in graph.nodes:
        if node.group != group:
            continue
        lines.append(f"{indent}{_mermaid_node(ids[node.name], node)}")
        if any(n.group == node.name for n in graph.nodes):
            title = _mermaid_text(f"{node.name} runs")
            lines.append(f'{indent}subgraph {ids[node.name]}_runs ["{title}"]')
            lines += _mermaid_nodes(graph, ids, node.name, indent + "    ")
            lines.append(f"{indent}end")
    return lines


def to_mermaid(graph: StateGraph, visited: Visited | None = None) -> str:
    ids = _ids(graph)
    lines = [
        "flowchart TD",
        f"    %% {graph.name}: forward -->, compensation -.->, reconciliation ==>",
    ]
    lines += _mermaid_nodes(graph, ids, None, "    ")
    for edge in graph.edges:
        plain, labelled = _MERMAID_ARROW[edge.kind]
        arrow = labelled.format(_mermaid_text(edge.label)) if edge.label else plain
        lines.append(f"    {ids[edge.source]} {arrow} {ids[edge.target]}")
    for role, (fill, stroke) in _COLORS.items():
        lines.append(f"    classDef {role.value} fill:{fill},stroke:{stroke},color:#1a202c")
    lines.append(f"    classDef visited stroke:{_VISITED},stroke-width:4px")
    for role in Role:
        members = [ids[n.name] for n in graph.nodes if n.role is role]
        if members:
            lines.append(f"    class {','.join(members)} {role.value}")
    for kind, color in _EDGE_COLORS.items():
        numbers = [str(i) for i, e in enumerate(graph.edges) if e.kind is kind]
        if numbers:
            lines.append(f"    linkStyle {','.join(numbers)} stroke:{color}")
    if visited is not None:
        seen = [ids[n.name] for n in graph.nodes if n.name in visited.states]
        if seen:
            lines.append(f"    class {','.join(seen)} visited")
        taken = [
            str(i) for i, e in enumerate(graph.edges) if (e.source, e.target) in visited.transitions
        ]
        if taken:
            lines.append(f"    linkStyle {','.join(taken)} stroke:{_VISITED},stroke-width:4px")
    return "\n".join(lines) + "\n"


# --- Graphviz DOT ----------------------------------------------------------------------

_DOT_STYLE = {
    EdgeKind.FORWARD: "solid",
    EdgeKind.COMPENSATION: "dashed",
    EdgeKind.RECONCILIATION: "bold",
}


def _dot_quote(*lines: str) -> str:
    """A DOT string literal; several lines are joined with DOT's ``\\n``."""
    escaped = (line.replace("\\", "\\\\").replace('"', '\\"') for line in lines)
    return '"' + "\\n".join(escaped) + '"'


def to_dot(graph: StateGraph, visited: Visited | None = None) -> str:
    seen = visited.states if visited else frozenset()
    taken = visited.transitions if visited else frozenset()
    lines = [
        f"digraph {_dot_quote(graph.name)} {{",
        "    rankdir=TB;",
        '    node [shape=box, style="rounded,filled", fontname="Helvetica"];',
        '    edge [fontname="Helvetica", fontsize=10];',
        "    // forward: solid, compensation: dashed, reconciliation: bold",
    ]
    parent = {n.name: n.group for n in graph.nodes}
    opened: list[str] = []  # the clusters we are in, outermost first
    for node in graph.nodes:
        chain: list[str] = []
        group = node.group
        while group is not None:
            chain.insert(0, group)
            group = parent.get(group)
        while opened and opened != chain[: len(opened)]:
            opened.pop()
            lines.append("    }")
        for group in chain[len(opened) :]:
            opened.append(group)
            lines.append(f"    subgraph {_dot_quote('cluster_' + group)} {{")
            lines.append(f"    label={_dot_quote(group + ' runs')};")
        fill, stroke = _COLORS[node.role]
        shape = "oval" if node.role is Role.TERMINAL else "box"
        if node.type == "Choice":
            shape = "diamond"
        attrs = [
            f"label={_dot_quote(node.name, node.detail)}",
            f"shape={shape}",
            f'fillcolor="{fill}"',
            f'color="{_VISITED if node.name in seen else stroke}"',
        ]
        if node.name in seen:
            attrs.append("penwidth=3")
        lines.append(f"    {_dot_quote(node.name)} [{', '.join(attrs)}];")
    lines += ["    }"] * len(opened)
    for edge in graph.edges:
        hit = (edge.source, edge.target) in taken
        attrs = [
            f"style={_DOT_STYLE[edge.kind]}",
            f'color="{_VISITED if hit else _EDGE_COLORS[edge.kind]}"',
        ]
        if edge.label:
            attrs.append(f"label={_dot_quote(edge.label)}")
        if hit:
            attrs.append("penwidth=3")
        lines.append(
            f"    {_dot_quote(edge.source)} -> {_dot_quote(edge.target)} [{', '.join(attrs)}];"
        )
    lines.append("}")
    return "\n".join(lines) + "\n"


def draw(
    definition: Mapping[str, Any],
    fmt: GraphFormat = GraphFormat.mermaid,
    *,
    name: str = "state machine",
    visited: Visited | None = None,
) -> str:
    """The picture of ``definition`` in ``fmt``, highlighting ``visited`` if given."""
    graph = build_graph(definition, name)
    return to_mermaid(graph, visited) if fmt is GraphFormat.mermaid else to_dot(graph, visited)
