"""No boto3 client in ``stepsaga/`` takes its region from boto3's own chain.

boto3 reads ``AWS_DEFAULT_REGION`` and the profile but not ``AWS_REGION``;
``stepsaga._aws.aws_region.region_from`` is the one rule that reads both. An AST scan of every
module holds the framework to it:

1. every ``….client(…)`` / ``….resource(…)`` call passes ``region_name=`` (never None);
2. only ``stepsaga/_aws/aws_region.py`` *reads* ``AWS_REGION``/``AWS_DEFAULT_REGION``
   (``environ.get``, ``os.getenv``, ``environ[…]``); setting them for a child process is fine;
3. a session's ``region_name`` (the profile's) is read only as ``region_from``'s
   ``profile_region`` argument.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import stepsaga

PACKAGE = Path(stepsaga.__file__).parent
RULE_MODULE = PACKAGE / "aws_region.py"
REGION_VARIABLES = {"AWS_REGION", "AWS_DEFAULT_REGION"}


def violations(source: str, *, is_rule_module: bool = False) -> list[str]:
    """Line-numbered breaches of the three rules in one module's source."""
    tree = ast.parse(source)
    found: list[str] = []
    inside_region_from: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _name(node.func) == "region_from":
            inside_region_from.update(id(n) for arg in node.args for n in ast.walk(arg))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _name(node.func) in ("client", "resource"):
            region = next((k.value for k in node.keywords if k.arg == "region_name"), None)
            if region is None or (isinstance(region, ast.Constant) and region.value is None):
                found.append(f"line {node.lineno}: {ast.unparse(node.func)}() without region_name")
        if is_rule_module:
            continue
        read = None
        if isinstance(node, ast.Call) and _name(node.func) in ("get", "getenv") and node.args:
            read = _constant(node.args[0])
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            read = _constant(node.slice)
        if read in REGION_VARIABLES:
            found.append(f"line {getattr(node, 'lineno', '?')}: reads {read} directly")
        if (
            isinstance(node, ast.Attribute)
            and node.attr == "region_name"
            and "session" in ast.unparse(node.value).lower()
            and id(node) not in inside_region_from
        ):
            found.append(f"line {node.lineno}: {ast.unparse(node)} outside region_from")
    return found


def _name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return None


def _constant(node: ast.expr) -> object:
    return node.value if isinstance(node, ast.Constant) else None


def test_every_module_of_the_framework_follows_the_region_rule() -> None:
    modules = sorted(PACKAGE.rglob("*.py"))
    assert len(modules) > 50
    breaches = {
        str(path.relative_to(PACKAGE.parent)): found
        for path in modules
        if (found := violations(path.read_text(), is_rule_module=path == RULE_MODULE))
    }
    assert breaches == {}


@pytest.mark.parametrize(
    ("source", "breach"),
    [
        ('import boto3\nboto3.client("sqs")', "without region_name"),
        ('import boto3\nboto3.Session().client("sts", region_name=None)', "without region_name"),
        ('import boto3\nboto3.resource("dynamodb")', "without region_name"),
        ('import os\nos.environ.get("AWS_REGION")', "reads AWS_REGION directly"),
        ('import os\nos.getenv("AWS_DEFAULT_REGION")', "reads AWS_DEFAULT_REGION directly"),
        ('import os\nos.environ["AWS_REGION"]', "reads AWS_REGION directly"),
        ("import boto3\nr = boto3.Session().region_name", "outside region_from"),
    ],
)
def test_the_scan_catches_each_way_around_the_rule(source: str, breach: str) -> None:
    (found,) = violations(source)
    assert breach in found


def test_the_ways_the_framework_does_it_pass() -> None:
    source = (
        "import os, boto3\n"
        "from stepsaga._aws.aws_region import region_from\n"
        "region = region_from(os.environ, boto3.Session().region_name)\n"
        'boto3.client("sqs", region_name=region)\n'
        'env = {"AWS_DEFAULT_REGION": region}\n'  # a child process's environment
        "client_region = boto3.client('sts', region_name=region).meta.region_name\n"
    )
    assert violations(source) == []
