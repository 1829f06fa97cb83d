"""Redrive of Parallel and Map: only failed or unfinished branches/iterations run again.

AWS (RedriveExecution): "For workflows that include an Inline Map or Parallel state,
RedriveExecution reschedules and redrives only the iterations and branches that failed or
aborted"; successful steps keep their results and are not re-run.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from stepsaga._project.home import StateHome
from stepsaga.engine._errors import INTERRUPTED
from stepsaga.errors import TransientError
from tests.framework.unit.engine.conftest import MakeEngine
from tests.framework.unit.engine.helpers import Script, machine, state_of, task, types
from tests.framework.unit.engine.test_parallel_map import PerItem, branch, mapped

EACH = machine(
    {
        "Each": mapped(
            {"StartAt": "Work", "States": {"Work": task("work", OutputPath="$.Payload")}},
            ItemsPath="$.items",
            ItemSelector={"id.$": "$$.Map.Item.Value"},
            ResultPath="$.done",
            Next="After",
        ),
        "After": task("after", ResultPath=None),
    }
)


def after_redrive(events: list[str]) -> list[str]:
    return events[events.index("ExecutionRedriven") :]


def aborted_before_redrive(events: list[dict[str, Any]], state: str) -> int:
    """How many of ``state``'s tasks the first run aborted after their function ran."""
    names = state_of(events)
    first = events[: [e["type"] for e in events].index("ExecutionRedriven")]
    started = [e for e in first if e["type"] == "TaskStarted" and names.get(e["id"]) == state]
    done = [
        e
        for e in first
        if e["type"] in ("TaskSucceeded", "TaskFailed") and names.get(e["id"]) == state
    ]
    return len(started) - len(done)


def aborted_iterations(events: list[dict[str, Any]]) -> dict[int, bool]:
    """The iterations the first run aborted, by index: whether its function had run (a
    ``TaskStarted`` on the iteration's ``previousEventId`` chain)."""
    by_id = {e["id"]: e for e in events}
    first = events[: [e["type"] for e in events].index("ExecutionRedriven")]
    aborted: dict[int, bool] = {}
    for event in first:
        if event["type"] != "MapIterationAborted":
            continue
        ran, cursor = False, by_id[event["previousEventId"]]
        while cursor["type"] != "MapIterationStarted":
            ran = ran or cursor["type"] == "TaskStarted"
            cursor = by_id[cursor["previousEventId"]]
        aborted[event["mapIterationAbortedEventDetails"]["index"]] = ran
    return aborted


def test_map_redrive_reruns_only_the_failed_iteration(make_engine: MakeEngine) -> None:
    work = PerItem(b=[TransientError("once"), {"done": "b"}])
    after = Script({})
    engine = make_engine({"work": work, "after": after})
    arn = engine.create_state_machine("each", EACH)
    failed = engine.start_execution(arn, "e", {"items": ["a", "b", "c"]})
    assert (failed["status"], failed["error"]) == ("FAILED", "TransientError")
    execution = failed["executionArn"]

    redriven = engine.redrive_execution(execution)
    assert redriven["status"] == "SUCCEEDED", redriven
    assert json.loads(redriven["output"])["done"] == [{"done": "a"}, {"done": "b"}, {"done": "c"}]
    assert len(after.events) == 1
    events = engine.get_execution_history(execution)["events"]
    # b's failure stops a and c: one stopped before its function ran runs once, on the
    # redrive; one stopped after it ran (result discarded) runs again
    aborted = aborted_iterations(events)
    assert work.calls == Counter(
        {"a": 1 + aborted.get(0, False), "b": 2, "c": 1 + aborted.get(2, False)}
    )
    rerun = [
        e["mapIterationStartedEventDetails"]["index"]
        for e in events[[e["type"] for e in events].index("ExecutionRedriven") :]
        if e["type"] == "MapIterationStarted"
    ]
    assert sorted(rerun) == sorted({1, *aborted})  # the failed one and the stopped ones


def test_map_redrive_runs_the_iterations_a_failure_kept_from_starting(
    make_engine: MakeEngine,
) -> None:
    definition = json.loads(json.dumps(EACH))
    definition["States"]["Each"]["MaxConcurrency"] = 1
    work = PerItem(b=[TransientError("once"), {"done": "b"}])
    engine = make_engine({"work": work, "after": Script({})})
    arn = engine.create_state_machine("each", definition)
    failed = engine.start_execution(arn, "e", {"items": ["a", "b", "c"]})
    assert work.calls == Counter({"a": 1, "b": 1})  # c never started
    execution = failed["executionArn"]
    redriven = engine.redrive_execution(execution)
    assert redriven["status"] == "SUCCEEDED"
    assert work.calls == Counter({"a": 1, "b": 2, "c": 1})
    events = engine.get_execution_history(execution)["events"]
    start = [e["type"] for e in events].index("ExecutionRedriven")
    assert [
        e["mapIterationStartedEventDetails"]["index"]
        for e in events[start:]
        if e["type"] == "MapIterationStarted"
    ] == [1, 2]
    assert after_redrive(types(engine, execution))[:3] == [
        "ExecutionRedriven",
        "MapStateEntered",
        "MapStateStarted",
    ]


def test_parallel_redrive_keeps_succeeded_branches_and_resumes_inside_the_failed_one(
    make_engine: MakeEngine,
) -> None:
    left1, left2 = Script({"l": 1}), Script({"l": 2})
    right1, right2 = Script({"r": 1}), Script(TransientError("once"), {"r": 2})
    engine = make_engine({"l1": left1, "l2": left2, "r1": right1, "r2": right2})
    definition = machine(
        {
            "Both": {
                "Type": "Parallel",
                "Branches": [
                    branch({"L1": task("l1", Next="L2"), "L2": task("l2", OutputPath="$.Payload")}),
                    branch({"R1": task("r1", Next="R2"), "R2": task("r2", OutputPath="$.Payload")}),
                ],
                "End": True,
            }
        }
    )
    failed = engine.start_execution(engine.create_state_machine("fan", definition), "e", {})
    assert failed["status"] == "FAILED"
    redriven = engine.redrive_execution(failed["executionArn"])
    assert redriven["status"] == "SUCCEEDED"
    assert json.loads(redriven["output"]) == [{"l": 2}, {"r": 2}]
    events = engine.get_execution_history(failed["executionArn"])["events"]
    # A left task's function runs again only if R2's failure aborted it (AWS: a function
    # already invoked runs to its end, its result discarded; the redrive runs the task
    # again). Branches run concurrently: under load R2 can fail while L1 is still running.
    assert len(right1.events) == 1
    assert len(left1.events) == 1 + aborted_before_redrive(events, "L1")
    assert len(left2.events) == 1 + aborted_before_redrive(events, "L2")
    assert len(right2.events) == 2
    start = [e["type"] for e in events].index("ExecutionRedriven")
    again = {
        e["stateEnteredEventDetails"]["name"]
        for e in events[start:]
        if e["type"] == "TaskStateEntered"
    }
    # The failed branch resumed at R2, where it failed (a left task only if R2's failure
    # cancelled the left branch before that task ended).
    assert "R2" in again
    assert again <= {"R2", "L1", "L2"}


def test_redrive_of_a_nested_parallel_inside_a_map_reruns_one_inner_branch(
    make_engine: MakeEngine,
) -> None:
    notify = PerItem()
    charge = PerItem(g2=[TransientError("once"), {"charged": "g2"}])
    engine = make_engine({"notify": notify, "charge": charge})
    definition = machine(
        {
            "Groups": mapped(
                {
                    "StartAt": "Fork",
                    "States": {
                        "Fork": {
                            "Type": "Parallel",
                            "Branches": [
                                branch({"Notify": task("notify", OutputPath="$.Payload")}),
                                branch({"Charge": task("charge", OutputPath="$.Payload")}),
                            ],
                            "End": True,
                        }
                    },
                },
                ItemSelector={"id.$": "$$.Map.Item.Value"},
                MaxConcurrency=1,
            )
        }
    )
    arn = engine.create_state_machine("nested", definition)
    failed = engine.start_execution(arn, "e", ["g1", "g2", "g3"])
    assert failed["status"] == "FAILED"
    redriven = engine.redrive_execution(failed["executionArn"])
    assert redriven["status"] == "SUCCEEDED", redriven
    events = engine.get_execution_history(failed["executionArn"])["events"]
    again = aborted_before_redrive(events, "Notify")  # g2's, stopped by Charge's failure
    assert notify.calls == Counter({"g1": 1, "g2": 1 + again, "g3": 1})
    assert charge.calls == Counter({"g1": 1, "g2": 2, "g3": 1})
    assert json.loads(redriven["output"])[1] == [{"done": "g2"}, {"charged": "g2"}]


def test_a_retried_map_reruns_everything_and_a_redrive_keeps_the_last_attempt(
    make_engine: MakeEngine,
) -> None:
    definition = json.loads(json.dumps(EACH))
    definition["States"]["Each"]["Retry"] = [{"ErrorEquals": ["TransientError"], "MaxAttempts": 1}]
    definition["States"]["Each"]["MaxConcurrency"] = 1
    work = PerItem(b=[TransientError("1"), TransientError("2"), {"done": "b"}])
    engine = make_engine({"work": work, "after": Script({})}, time_scale=0)
    arn = engine.create_state_machine("each", definition)
    failed = engine.start_execution(arn, "e", {"items": ["a", "b"]})
    assert failed["status"] == "FAILED"
    assert work.calls == Counter({"a": 2, "b": 2})  # the Retry re-ran a too
    redriven = engine.redrive_execution(failed["executionArn"])
    assert redriven["status"] == "SUCCEEDED"
    assert work.calls == Counter({"a": 2, "b": 3})  # the redrive did not


CHILD = textwrap.dedent(
    """
    import json, os, sys
    from pathlib import Path
    from stepsaga.engine import LocalEngine
    from stepsaga._project.home import StateHome

    def work(event, context):
        if event["id"] == "b":
            os._exit(9)  # the process dies inside the second iteration
        return {"done": event["id"]}

    engine = LocalEngine(StateHome(Path(sys.argv[1])), {"work": work, "after": work})
    arn = engine.create_state_machine("each", json.loads(sys.argv[2]))
    engine.start_execution(arn, "case-1", {"items": ["a", "b", "c"]})
    """
)


def test_a_process_dying_inside_a_map_is_redriven_without_repeating_iterations(
    home: StateHome, make_engine: MakeEngine
) -> None:
    definition = json.loads(json.dumps(EACH))
    definition["States"]["Each"]["MaxConcurrency"] = 1
    root = Path(__file__).resolve().parents[4]
    child = subprocess.run(
        [sys.executable, "-c", CHILD, str(home.root), json.dumps(definition)],
        cwd=root,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert child.returncode == 9, child.stderr.decode()

    work = PerItem()
    engine = make_engine({"work": work, "after": Script({})})
    execution = engine.list_executions()["executions"][0]
    assert execution["status"] == "ABORTED"
    described = engine.describe_execution(execution["executionArn"])
    assert described["error"] == INTERRUPTED
    assert "'Each'" in described["cause"]
    assert types(engine, execution["executionArn"])[-2:] == ["MapStateAborted", "ExecutionAborted"]

    redriven = engine.redrive_execution(execution["executionArn"])
    assert redriven["status"] == "SUCCEEDED", redriven
    assert work.calls == Counter({"b": 1, "c": 1})  # a completed before the crash
    output: Any = json.loads(redriven["output"])
    assert output["done"] == [{"done": "a"}, {"done": "b"}, {"done": "c"}]


def test_ctrl_c_inside_an_iteration_aborts_visibly_and_redrives_that_iteration(
    make_engine: MakeEngine,
) -> None:
    work = PerItem(b=[KeyboardInterrupt(), {"done": "b"}])
    definition = json.loads(json.dumps(EACH))
    definition["States"]["Each"]["MaxConcurrency"] = 1
    engine = make_engine({"work": work, "after": Script({})})
    arn = engine.create_state_machine("each", definition)
    with pytest.raises(KeyboardInterrupt):
        engine.start_execution(arn, "e", {"items": ["a", "b", "c"]})
    execution = engine.list_executions()["executions"][0]["executionArn"]
    described = engine.describe_execution(execution)
    assert (described["status"], described["error"]) == ("ABORTED", INTERRUPTED)
    assert types(engine, execution)[-4:] == [
        "TaskStateAborted",
        "MapIterationAborted",
        "MapStateAborted",
        "ExecutionAborted",
    ]
    assert engine.redrive_execution(execution)["status"] == "SUCCEEDED"
    assert work.calls == Counter({"a": 1, "b": 2, "c": 1})
