"""One rule for a time scale: finite, 0 to ``MAX_TIME_SCALE``, for the flag, the
environment variable, the engine and the local backend alike."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepsaga._project.home import StateHome
from stepsaga.backends._local import LocalBackend
from stepsaga.engine import LocalEngine
from stepsaga.engine._engine import MAX_TIME_SCALE, check_time_scale, time_scale_from_env
from stepsaga.errors import InvalidExecutionInput, InvalidInputError
from tests.framework.functional.cli_support import case_data, files
from workflows.case import parse_case
from workflows.project import reference_project

BAD: list[object] = [
    1e308,
    float("inf"),
    float("nan"),
    -1,
    -0.001,
    MAX_TIME_SCALE + 0.5,
    True,
    None,
    "1e308",
    "inf",
    "nan",
    "-1",
    "1_000",
    "+1",
    "0x10",
    "1,5",
    "\u0661",
    "",
]


@pytest.mark.parametrize("value", [0, 0.0, 1, 0.25, MAX_TIME_SCALE, "0", " 2.5 ", "1e2", ".5"])
def test_accepted_time_scales(value: object) -> None:
    assert check_time_scale(value) == float(value)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", BAD, ids=repr)
def test_refused_time_scales_are_one_line_naming_the_source(value: object) -> None:
    with pytest.raises(InvalidExecutionInput) as caught:
        check_time_scale(value, "--time-scale")
    assert caught.value.message.startswith("--time-scale must be a number from 0 to 1000, got ")
    assert caught.value.data["field"] == "--time-scale"


@pytest.mark.parametrize("raw", ["1e308", "inf", "nan", "1001", "1_000"])
def test_the_environment_variable_uses_the_same_rule(raw: str) -> None:
    with pytest.raises(InvalidExecutionInput, match=r"^STEPSAGA_TIME_SCALE must be a number"):
        time_scale_from_env({"STEPSAGA_TIME_SCALE": raw})


def test_the_engine_uses_the_same_rule(tmp_path: Path) -> None:
    with pytest.raises(InvalidExecutionInput, match="time_scale must be"):
        LocalEngine(StateHome(tmp_path / "home"), {}, time_scale=1e308)


@pytest.mark.parametrize("value", [1e308, float("nan"), 1001.0])
def test_the_local_backend_refuses_before_writing(tmp_path: Path, value: float) -> None:
    home = StateHome(tmp_path / "home")
    with (
        LocalBackend(home, reference_project()) as backend,
        pytest.raises(InvalidInputError, match="time_scale"),
    ):
        backend.start(parse_case(case_data()), time_scale=value)
    assert files(home) == []
