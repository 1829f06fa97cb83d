"""docs/architecture.md's table, enforced: which package of stepsaga may import which.

Every ``import`` and ``from … import`` in ``stepsaga/**.py`` (inside functions and
``TYPE_CHECKING`` blocks too) is an edge between two groups: a door (``workflow``,
``ledger``, …), a private group (``_model``, ``_util``, …), the top door (``stepsaga``),
``errors``, ``lambdas``, ``__main__`` or the deprecated ``shims`` at the old handler paths.
The edges found must be exactly the table below: a new edge is a design change (update the
page and the table together), and an edge that disappeared is a rule to tighten.
"""

from __future__ import annotations

import ast
from pathlib import Path

import stepsaga

PACKAGE = Path(stepsaga.__file__).parent
DOC = PACKAGE.parent / "docs" / "architecture.md"

#: The deprecated Lambda handler paths (one release; each only calls ``stepsaga.lambdas``).
SHIMS = {"lambda_handler", "ingress", "auto_redrive", "audit_copy", "resolver", "reconciliation"}

#: group → the groups it may import (and does). Keep in step with docs/architecture.md.
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "_util": {"errors"},
    "_model": {"errors", "_util", "ledger"},  # exception: ledger's MAX_REVISION
    "_project": {"errors", "_util", "_model", "_aws", "workflow"},
    "engine": {"errors", "_util", "_model", "_project"},
    "ledger": {"errors", "_util", "_model", "_aws", "_handlers"},  # exception: metrics, region
    "workflow": {"errors", "_util", "_model", "ledger", "engine"},
    "_handlers": {"errors", "_util", "_model", "_project", "_aws", "_reconciliation"}
    | {"ledger", "workflow"},
    "_reconciliation": {"errors", "_util", "_model", "_project", "_aws", "ledger", "workflow"},
    "_aws": {"errors", "_util", "_model", "_project", "_handlers", "ledger", "workflow"}
    | {"backends"},
    "backends": {"errors", "_util", "_model", "_project", "_aws", "_handlers"}
    | {"_reconciliation", "ledger", "workflow", "engine"},
    "agents": {"errors", "_util", "_model", "_handlers", "_reconciliation", "ledger", "workflow"},
    "testing": {"errors", "_util", "_model", "_project", "_aws", "_handlers"}
    | {"ledger", "workflow", "engine", "backends"},
    "cdk": {"stepsaga", "errors", "_util", "_project", "_aws", "_reconciliation"}
    | {"ledger", "workflow", "backends"},  # exception: backends (the resolver's timeout, undo)
    "console": {"errors", "_util", "_project", "_reconciliation"}
    | {"ledger", "workflow", "engine", "backends"},
    "cli": {"stepsaga", "errors", "_util", "_model", "_project", "_aws"}
    | {"ledger", "workflow", "engine", "backends", "console", "scaffold"},
    "scaffold": {"errors"},
    "stepsaga": {"_util", "_model", "_project", "_handlers", "workflow"},
    "lambdas": {"_util", "_aws", "_handlers", "_reconciliation"},
    "shims": {"lambdas"},
    "__main__": {"cli"},
}


def _group_of_file(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    if parts == ("__init__",):
        return "stepsaga"
    if parts[0] in SHIMS:
        return "shims"
    return parts[0]


def _group_of_module(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return "stepsaga"
    if parts[1] in SHIMS:
        return "shims"
    return parts[1]


def _is_module(name: str) -> bool:
    return (PACKAGE / f"{name}.py").exists() or (PACKAGE / name / "__init__.py").exists()


def _imports(tree: ast.AST) -> list[str]:
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "stepsaga":  # ``from stepsaga import errors`` imports a module
                found += [
                    f"stepsaga.{alias.name}" if _is_module(alias.name) else "stepsaga"
                    for alias in node.names
                ]
            else:
                found.append(node.module)
    return [name for name in found if name == "stepsaga" or name.startswith("stepsaga.")]


def measured_edges() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        source = _group_of_file(path)
        for module in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            target = _group_of_module(module)
            if target != source:
                edges.setdefault(source, set()).add(target)
    return edges


def test_the_packages_import_exactly_what_the_table_allows() -> None:
    edges = measured_edges()
    extra = {f"{s} -> {t}" for s, ts in edges.items() for t in ts - ALLOWED.get(s, set())}
    unused = {f"{s} -> {t}" for s, ts in ALLOWED.items() for t in ts - edges.get(s, set())}
    assert not extra, f"imports the table does not allow: {sorted(extra)}"
    assert not unused, f"allowed edges no code uses any more (tighten the table): {sorted(unused)}"
    assert set(edges) <= set(ALLOWED)


def test_the_rules_the_page_states_hold() -> None:
    """The page's headline rules, stated separately so a table edit cannot drop one."""
    edges = measured_edges()
    assert not edges.get("errors")
    assert edges["_util"] <= {"errors"}
    assert not {"ledger", "backends"} & edges["engine"]
    assert not {"engine", "backends", "workflow"} & edges["ledger"]
    importers_of_cli_or_console = {s for s, ts in edges.items() if ts & {"cli", "console"}}
    assert importers_of_cli_or_console <= {"__main__", "cli"}
    assert not {s for s, ts in edges.items() if "testing" in ts}  # only tests import it


def test_the_page_draws_every_group() -> None:
    page = DOC.read_text(encoding="utf-8")
    assert "```mermaid" in page
    for group in ALLOWED:
        assert f"`{group}`" in page or f" {group}" in page, group
