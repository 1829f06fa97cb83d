"""A team's own saga, from its own project: the framework runs it through the CLI and the
generic Lambda entry point, importing nothing of the reference app.

The project is the one ``stepsaga init`` writes (a subscription-upgrade sample saga with
its own input model, handlers and fake clients), made in a temp dir and driven in
subprocesses whose working directory is that project, with ``--project`` naming it, so
the only ``workflows``/``tasks`` packages they can import are the team's own.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

KEY = "initech:UP-1:r1"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "upgrade-app"
    made = python(tmp_path, "-m", "stepsaga", "init", str(root), timeout=60)
    assert made.returncode == 0, made.stderr
    return root


def _env(project: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STEPSAGA_", "PYTHON"))}
    env.update({"STEPSAGA_HOME": str(project / ".stepsaga"), "STEPSAGA_TIME_SCALE": "0"})
    env.update(extra)
    return env


def python(
    cwd: Path, *args: str, timeout: float = 120, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """This interpreter in ``cwd``, with the clean environment ``_env`` makes (plus
    ``env``)."""
    return subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env=_env(cwd, **(env or {})),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def stepsaga(project: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return python(project, "-m", "stepsaga", "--project", str(project), *args, env=env)


def ok(done: subprocess.CompletedProcess[str]) -> Any:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def effects(project: Path) -> Counter[str]:
    path = project / ".stepsaga" / "upgrade-fakes.sqlite3"
    with sqlite3.connect(path) as db:
        return Counter(row[0] for row in db.execute("SELECT operation FROM effects"))


def test_a_clean_case_completes_with_the_sagas_own_steps(project: Path) -> None:
    view = ok(stepsaga(project, "start", "examples/case.json", "--json"))

    assert (view["status"], view["outcome"], view["saga"]) == (
        "SUCCEEDED",
        "completed",
        "subscription-upgrade",
    )
    assert view["stateMachineArn"].endswith(":stateMachine:subscription-upgrade")
    steps = {s["state"]: (s["action_key"], s["ledger_status"]) for s in view["steps"]}
    assert steps == {
        "ChargeCard": (f"{KEY}:charge_card", "COMPLETED"),
        "ProvisionSeat": (f"{KEY}:provision_seat", "COMPLETED"),
        "SendWelcomeEmail": (f"{KEY}:send_welcome_email", "COMPLETED"),
        "DeprovisionSeat": (f"{KEY}:provision_seat:compensate:deprovision_seat", None),
    }
    assert effects(project) == {"charge_card": 1, "provision_seat": 1, "send_welcome_email": 1}
    status = ok(stepsaga(project, "status", "UP-1", "--json"))
    assert [s["state"] for s in status["steps"]] == list(steps)
    history = ok(stepsaga(project, "history", "UP-1", "--json"))
    assert history["events"][-1]["type"] == "ExecutionSucceeded"


def test_a_rejected_step_is_compensated(project: Path) -> None:
    view = ok(
        stepsaga(
            project,
            "start",
            "examples/case.json",
            "--json",
            UPGRADE_FAULT="send_welcome_email:reject",
        )
    )
    assert view["outcome"] == "compensated"
    assert effects(project) == {"charge_card": 1, "provision_seat": 1, "deprovision_seat": 1}
    items = ok(stepsaga(project, "recon", "list", "--json"))["items"]
    assert [item["reason"] for item in items] == ["escalated: card charged, seats not provisioned"]


def test_an_uncertain_step_waits_for_a_person_then_completes(project: Path) -> None:
    view = ok(
        stepsaga(
            project,
            "start",
            "examples/case.json",
            "--json",
            UPGRADE_FAULT="provision_seat:uncertain",
        )
    )
    assert view["outcome"] == "awaiting_reconciliation"
    assert view["waiting_for"] == ["AwaitDecisionProvisionSeat"]
    (item,) = ok(stepsaga(project, "recon", "list", "--json"))["items"]
    assert item["action_key"] == f"{KEY}:provision_seat"

    resolved = ok(
        stepsaga(
            project,
            "recon",
            "resolve",
            item["id"],
            "--outcome",
            "applied",
            "--by",
            "ops@initech.example",
            "--note",
            "seat visible in the admin console",
            "--json",
        )
    )
    assert resolved["execution"]["outcome"] == "completed"
    assert effects(project) == {"charge_card": 1, "provision_seat": 1, "send_welcome_email": 1}


def test_exhausted_retries_fail_and_a_redrive_completes(project: Path) -> None:
    view = ok(
        stepsaga(
            project,
            "start",
            "examples/case.json",
            "--json",
            UPGRADE_FAULT="send_welcome_email:transient",
        )
    )
    assert (view["status"], view["error"]) == ("FAILED", "TransientError")

    redriven = ok(stepsaga(project, "redrive", "--case", "UP-1", "--json"))
    assert (redriven["status"], redriven["outcome"], redriven["redriveCount"]) == (
        "SUCCEEDED",
        "completed",
        1,
    )
    assert effects(project) == {"charge_card": 1, "provision_seat": 1, "send_welcome_email": 1}


def test_a_verb_aimed_at_an_undeclared_saga_exits_2(project: Path) -> None:
    waiting = stepsaga(
        project, "start", "examples/case.json", "--json", UPGRADE_FAULT="provision_seat:uncertain"
    )
    assert ok(waiting)["outcome"] == "awaiting_reconciliation"
    (item,) = ok(stepsaga(project, "recon", "list", "--json"))["items"]
    pyproject = project / "pyproject.toml"
    pyproject.write_text(
        pyproject.read_text().replace(
            'subscription-upgrade = "workflows.upgrade:saga"', 'other = "workflows.other:saga"'
        )
    )
    resolve = ["recon", "resolve", item["id"], "--outcome", "applied", "--by", "ops", "--note", "x"]
    verbs = (["status", "UP-1"], ["redrive", "--case", "UP-1"], ["start", "examples/case.json"])
    for args in (*verbs, resolve):
        done = stepsaga(project, *args)
        assert done.returncode == 2, (args, done.stderr)
        assert done.stderr.count("\n") == 1, done.stderr
    assert "belongs to saga 'subscription-upgrade'" in stepsaga(project, "status", "UP-1").stderr
    # The refused resolve changed nothing: the item is still open, its case still waits.
    assert ok(stepsaga(project, "recon", "show", item["id"], "--json"))["status"] == "OPEN"


def test_without_a_project_the_cli_says_how_to_make_one(tmp_path: Path) -> None:
    done = python(tmp_path, "-m", "stepsaga", "start", "case.json", timeout=60)
    assert done.returncode == 2
    assert done.stderr.startswith("error: no stepsaga project in")
    assert "[tool.stepsaga.sagas]" in done.stderr


LAMBDA_RUN = textwrap.dedent(
    """
    import json, os, sys
    from pathlib import Path
    from stepsaga.engine import LocalEngine
    from stepsaga._handlers import entrypoint
    from stepsaga._project.home import StateHome
    from stepsaga.lambda_handler import handler
    from stepsaga.workflow import compile
    from stepsaga.workflow._substitutions import render
    from workflows.upgrade import OWNER, Upgrade, saga

    assert OWNER == "upgrade-app", "imported someone else's workflows package"
    invoked = []

    def function(name):
        def run(event, context):
            os.environ["STEPSAGA_FUNCTION"] = name
            entrypoint.reset()
            invoked.append(name)
            return handler(event, context)
        return run

    arn = "arn:aws:lambda:us-east-1:123456789012:function:{}".format
    definition = render(compile(saga), saga.definition_substitutions(arn))
    case = Upgrade.model_validate_json(open(sys.argv[1]).read())
    registry = {arn(f): function(f) for f in saga.functions}
    engine = LocalEngine(StateHome(Path(sys.argv[2])), registry)
    machine = engine.ensure_state_machine(saga.name, definition)
    done = engine.start_execution(machine, "initech-UP-1-r1", case.execution_input())
    print(json.dumps({"status": done["status"], "invoked": invoked}))
    """
)


def test_the_projects_functions_run_through_the_generic_lambda_entry(project: Path) -> None:
    """The events the compiled ASL builds, given to ``stepsaga.lambda_handler.handler`` with
    the environment the CDK app sets, run the team's handlers."""
    engine_home = project / "engine"
    done = python(
        project,
        "-c",
        LAMBDA_RUN,
        "examples/case.json",
        str(engine_home),
        env={
            "STEPSAGA_SAGA": "workflows.upgrade:saga",
            "STEPSAGA_DEPENDENCIES": "clients:dependencies",
            "STEPSAGA_LEDGER_URL": f"sqlite:///{project / 'lambda-ledger.sqlite3'}",
            "UPGRADE_HOME": str(project / ".stepsaga"),
        },
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result == {
        "status": "SUCCEEDED",
        "invoked": ["ChargeCard", "ProvisionSeat", "SendWelcomeEmail"],
    }
    assert effects(project) == {"charge_card": 1, "provision_seat": 1, "send_welcome_email": 1}


def test_the_demo_is_a_project_command(project: Path) -> None:
    done = stepsaga(project, "demo")
    assert done.returncode == 2
    assert done.stderr.startswith("error: demo is a project command")
    assert done.stderr.count("\n") == 1


def test_the_new_projects_own_tests_pass(project: Path) -> None:
    done = python(project, "-m", "pytest", "-q", "-p", "no:cacheprovider", timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 passed" in done.stdout


def test_the_new_projects_tests_pass_when_the_clock_ticks_between_calls(project: Path) -> None:
    """One approval per test: with every ``datetime.now()`` a second later than the one
    before, the tests still build the same case each time (the approval time is in the
    digest: a case built twice with two times is two different requests)."""
    (project / "tests" / "conftest.py").write_text(
        textwrap.dedent(
            """
            import itertools
            from datetime import datetime, timedelta

            import pytest

            _TICKS = itertools.count()


            class Ticking(datetime):
                @classmethod
                def now(cls, tz=None):
                    return datetime.now(tz) + timedelta(seconds=next(_TICKS))


            @pytest.fixture(autouse=True)
            def _ticking_clock(monkeypatch):
                monkeypatch.setattr("tests.test_upgrade.datetime", Ticking)
            """
        )
    )
    done = python(project, "-m", "pytest", "-q", "-p", "no:cacheprovider", timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 passed" in done.stdout


def test_init_refuses_a_folder_that_holds_anything(project: Path) -> None:
    before = sorted(p.name for p in project.iterdir())
    done = stepsaga(project, "init", str(project))
    assert done.returncode == 2
    assert "not an empty folder" in done.stderr
    assert sorted(p.name for p in project.iterdir()) == before


def test_a_broken_project_command_breaks_only_itself(project: Path) -> None:
    pyproject = project / "pyproject.toml"
    pyproject.write_text(
        pyproject.read_text() + '\n[tool.stepsaga.commands]\nreport = "clients.nowhere:report"\n'
    )
    assert stepsaga(project, "status", "UP-1").stderr.startswith("error: no execution")
    done = stepsaga(project, "report")
    assert done.returncode == 2
    assert done.stderr == (
        "error: command report: command report 'clients.nowhere:report': "
        "no module named 'clients.nowhere'\n"
    )
