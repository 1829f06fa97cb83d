"""``stepsaga asl`` and ``stepsaga graph``."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from stepsaga.cli._app import app
from stepsaga.workflow._loader import load_saga

runner = CliRunner()

USER_SAGA = textwrap.dedent(
    """
    from stepsaga import Compensate, EffectClass, Escalate, Saga, Step

    returns = Saga("returns", [
        Step("IssueLabel", "issue_label", EffectClass.KEYED_WRITE, params="label",
             on_later_failure=Compensate("VoidLabel", "void_label", EffectClass.KEYED_WRITE)),
        Step("Notify", "notify", EffectClass.BLIND_WRITE, on_later_failure=Escalate("sent")),
    ])
    not_a_saga = 42
    """
)


@pytest.fixture
def user_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "my_sagas.py").write_text(USER_SAGA, encoding="utf-8")
    (tmp_path / "broken_saga.py").write_text(
        "from stepsaga import Saga\nsaga = Saga('bad name', [])\n", encoding="utf-8"
    )
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_asl_prints_the_compiled_replacement_order(definition: dict[str, Any]) -> None:
    result = runner.invoke(app, ["asl"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == definition


def test_asl_takes_a_users_saga(user_project: Path) -> None:
    for args in (["asl", "my_sagas:returns"], ["asl", "--workflow", "my_sagas:returns"]):
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        assert "VoidLabel" in json.loads(result.stdout)["States"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["asl", "nowhere:saga"], "workflow 'nowhere:saga': no module named 'nowhere'"),
        (["asl", "my_sagas:missing"], "module my_sagas has no attribute 'missing'"),
        (["asl", "my_sagas:not_a_saga"], "not_a_saga is a int, not a stepsaga Saga"),
        (["asl", "not a module:x"], "expected 'package.module:attr'"),
        (["graph", "broken_saga:saga"], "name must be 1-80 letters"),
        (["asl", "returns"], "no stepsaga project in"),
        (["asl", "a:b", "--workflow", "c:d"], "two different workflows given"),
        (["graph", "--format", "png"], "Invalid value for '--format'"),
    ],
)
def test_bad_workflow_is_one_line_and_exit_2(
    user_project: Path, args: list[str], message: str
) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert message in result.output
    assert result.stdout == "" or "Usage" in result.output


def test_graph_defaults_to_mermaid_of_the_replacement_order() -> None:
    result = runner.invoke(app, ["graph"])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("flowchart TD\n")
    assert "CreateShipment -.->|rejected| EscalateRefundPayment" in result.stdout


def test_graph_dot(user_project: Path) -> None:
    result = runner.invoke(app, ["graph", "my_sagas:returns", "--format", "dot"])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith('digraph "returns" {')


def test_default_attribute_is_saga() -> None:
    assert load_saga("workflows.replacement_order").name == "replacement-order"


def test_the_docs_example_compiles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    page = Path(__file__).parents[4] / "docs" / "how-to" / "write-a-saga.md"
    example = page.read_text(encoding="utf-8").split('```python title="my_sagas.py"\n', 1)[1]
    example = example.split("```", 1)[0]
    (tmp_path / "readme_sagas.py").write_text(example, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["asl", "readme_sagas:returns"])
    assert result.exit_code == 0, result.output
    assert "EscalateRefundPayment" not in json.loads(result.stdout)["States"]  # last step
    assert "VoidLabel" in json.loads(result.stdout)["States"]
