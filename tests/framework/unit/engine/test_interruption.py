"""A process that dies mid-execution leaves it visibly interrupted and redrivable."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from stepsaga._project.home import StateHome
from stepsaga.engine._errors import INTERRUPTED
from tests.framework.unit.engine.conftest import MakeEngine
from tests.framework.unit.engine.helpers import Script, entered, machine, task, types

DEFINITION = machine(
    {
        "Reserve": task("reserve", ResultPath="$.r", Next="Ship"),
        "Ship": task("ship", ResultPath="$.s"),
    }
)

CHILD = textwrap.dedent(
    """
    import json, os, sys
    from pathlib import Path
    from stepsaga.engine import LocalEngine
    from stepsaga._project.home import StateHome

    def reserve(event, context):
        return {"reserved": True}

    def ship(event, context):
        os._exit(9)  # the process dies while the effect may be under way

    engine = LocalEngine(StateHome(Path(sys.argv[1])), {"reserve": reserve, "ship": ship})
    arn = engine.create_state_machine("order", json.loads(sys.argv[2]))
    engine.start_execution(arn, "case-1", {"case": 1})
    """
)


def test_a_dead_process_is_reported_and_redriven(home: StateHome, make_engine: MakeEngine) -> None:
    root = Path(__file__).resolve().parents[4]
    child = subprocess.run(
        [sys.executable, "-c", CHILD, str(home.root), json.dumps(DEFINITION)],
        cwd=root,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert child.returncode == 9, child.stderr.decode()

    reserve, ship = Script({"again": True}), Script({"shipped": True})
    engine = make_engine({"reserve": reserve, "ship": ship})
    execution = engine.list_executions()["executions"][0]
    assert execution["status"] == "ABORTED"  # listing found the dead owner
    described = engine.describe_execution(execution["executionArn"])
    assert described["error"] == INTERRUPTED
    assert "'Ship'" in described["cause"]
    assert "Redrive" in described["cause"]
    history = types(engine, execution["executionArn"])
    # Everything up to the scheduled (maybe half-done) task was kept.
    assert history[-5:] == [
        "TaskStateEntered",
        "TaskScheduled",
        "TaskStarted",
        "TaskStateAborted",
        "ExecutionAborted",
    ]

    redriven = engine.redrive_execution(execution["executionArn"])
    assert redriven["status"] == "SUCCEEDED"
    assert reserve.events == []  # the completed state is not re-run
    assert json.loads(redriven["output"])["r"]["Payload"] == {"reserved": True}
    assert entered(engine, execution["executionArn"]) == ["Reserve", "Ship", "Ship"]


def test_keyboard_interrupt_marks_the_execution_aborted(make_engine: MakeEngine) -> None:
    engine = make_engine({"reserve": Script({}), "ship": Script(KeyboardInterrupt())})
    arn = engine.create_state_machine("order", DEFINITION)
    with pytest.raises(KeyboardInterrupt):
        engine.start_execution(arn, "case-1", {})
    (execution,) = engine.list_executions()["executions"]
    described = engine.describe_execution(execution["executionArn"])
    assert (described["status"], described["error"]) == ("ABORTED", INTERRUPTED)
    assert "KeyboardInterrupt" in described["cause"]


def test_recover_interrupted_ignores_live_owners(make_engine: MakeEngine) -> None:
    engine = make_engine({"reserve": Script({}), "ship": Script({})})
    assert engine.recover_interrupted() == []
