"""Bad input: exit 2, one line on stderr naming the problem, and nothing written — the home
folder is not even created."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from stepsaga._project.home import StateHome
from tests.framework.functional.cli_support import (
    EXAMPLES,
    case_data,
    cli,
    files,
    write_case,
    write_faults,
    write_json,
)

Make = Callable[[Path], Path]


def _raw(text: bytes) -> Make:
    def make(folder: Path) -> Path:
        path = folder / "case.json"
        path.write_bytes(text)
        return path

    return make


def _case(**changes: Any) -> Make:
    def make(folder: Path) -> Path:
        return write_json(folder / "case.json", case_data(**changes))

    return make


def _without(field: str) -> Make:
    def make(folder: Path) -> Path:
        data = case_data()
        del data[field]
        return write_json(folder / "case.json", data)

    return make


def _refund(amount: object, currency: str = "USD") -> Make:
    return _case(refund={"payment_id": "PAY-991", "amount": amount, "currency": currency})


BAD_CASES: dict[str, tuple[Make, str]] = {
    "missing field": (_without("refund"), "refund"),
    "unknown field": (_case(colour="red"), "colour"),
    "negative amount": (_refund("-5.00"), "refund"),
    "over-precise amount": (_refund("20.001"), "refund"),
    "unknown currency": (_refund("20.00", "XXY"), "refund"),
    "bad tenant": (_case(tenant_id="Not A Tenant"), "tenant_id"),
    "wrong type": (_case(order_id=77), "order_id"),
    "empty file": (_raw(b""), "empty"),
    "not json": (_raw(b"{not json"), "invalid JSON"),
    "not utf-8": (_raw(b'{"tenant_id": "\xff"}'), "UTF-8"),
    "a list": (_raw(b"[1, 2]"), "JSON object"),
    "deeply nested": (_raw(b"[" * 100_000 + b"]" * 100_000), "case"),
}


def _assert_refused(home: StateHome, result_code: int, err: str, out: str, says: str) -> None:
    assert result_code == 2, err
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ")
    assert says in lines[0]
    assert files(home) == []


@pytest.mark.parametrize("name", sorted(BAD_CASES))
def test_bad_case_file(home: StateHome, tmp_path: Path, name: str) -> None:
    make, says = BAD_CASES[name]
    result = cli(home, "start", str(make(tmp_path)), "--json")
    _assert_refused(home, result.code, result.err, result.out, says)


def test_missing_case_file_and_directory(home: StateHome, tmp_path: Path) -> None:
    result = cli(home, "start", str(tmp_path / "nope.json"))
    _assert_refused(home, result.code, result.err, result.out, "no such file")
    result = cli(home, "start", str(tmp_path))
    _assert_refused(home, result.code, result.err, result.out, "is a directory")


@pytest.mark.parametrize(
    ("faults", "says"),
    [
        (
            {"faults": [{"service": "payments", "operation": "refund", "fault": "explode"}]},
            "faults.0.fault",
        ),
        (
            {"faults": [{"service": "payments", "operation": "reserve", "fault": "reject"}]},
            "faults.0.operation",
        ),
        ({"rules": []}, "rules"),
    ],
)
def test_bad_faults_file(home: StateHome, tmp_path: Path, faults: object, says: str) -> None:
    path = write_json(tmp_path / "faults.json", faults)
    result = cli(home, "start", str(write_case(tmp_path)), "--faults", str(path))
    _assert_refused(home, result.code, result.err, result.out, says)


def test_faults_file_not_json(home: StateHome, tmp_path: Path) -> None:
    path = tmp_path / "faults.json"
    path.write_text("nope")
    result = cli(home, "start", str(write_case(tmp_path)), "--faults", str(path))
    _assert_refused(home, result.code, result.err, result.out, "invalid JSON")


GOOD_MOCK = EXAMPLES / "mock-config" / "replacement-order.json"


@pytest.mark.parametrize(
    ("mock", "test_case", "says"),
    [
        ("not json", "HappyPath", "invalid JSON"),
        ({"StateMachines": {}}, "HappyPath", "replacement-order"),
        (GOOD_MOCK, "NoSuchCase", "NoSuchCase"),
        (
            {
                "StateMachines": {"replacement-order": {"TestCases": {"T": {"Prepare": "R"}}}},
                "MockedResponses": {"R": {"0": {"Return": {}}}},
            },
            "T",
            "Prepare",
        ),
        (
            {
                "StateMachines": {"other-machine": {"TestCases": {"T": {"ReserveStock": "R"}}}},
                "MockedResponses": {"R": {"0": {"Return": {}}}},
            },
            "T",
            "replacement-order",
        ),
    ],
)
def test_bad_mock_config(
    home: StateHome, tmp_path: Path, mock: object, test_case: str, says: str
) -> None:
    if isinstance(mock, Path):
        path = mock
    else:
        path = tmp_path / "mock.json"
        path.write_text(mock if isinstance(mock, str) else json.dumps(mock))
    result = cli(
        home,
        "start",
        str(write_case(tmp_path)),
        "--mock-config",
        str(path),
        "--test-case",
        test_case,
    )
    _assert_refused(home, result.code, result.err, result.out, says)


@pytest.mark.parametrize(
    "flags",
    [
        ["--test-case", "HappyPath"],
        ["--mock-config", str(GOOD_MOCK)],
    ],
)
def test_mock_flags_go_together(home: StateHome, tmp_path: Path, flags: list[str]) -> None:
    result = cli(home, "start", str(write_case(tmp_path)), *flags)
    _assert_refused(home, result.code, result.err, result.out, "--mock-config and --test-case")


@pytest.mark.parametrize(
    "flags",
    [
        ["--time-scale", "-1"],
        ["--time-scale", "soon"],
        ["--bogus"],
        [],
    ],
)
def test_bad_flags_exit_2_and_write_nothing(
    home: StateHome, tmp_path: Path, flags: list[str]
) -> None:
    args = ["start", *flags] if not flags else ["start", str(write_case(tmp_path)), *flags]
    result = cli(home, *args)
    assert result.code == 2
    assert files(home) == []


def test_bad_time_scale_environment(home: StateHome, tmp_path: Path) -> None:
    result = cli(home, "start", str(write_case(tmp_path)), env={"STEPSAGA_TIME_SCALE": "fast"})
    _assert_refused(home, result.code, result.err, result.out, "STEPSAGA_TIME_SCALE")


@pytest.mark.parametrize(
    "args",
    [
        ["status", "CASE-1001"],
        ["status", "CASE-1001", "--json"],
        ["history", "acme-CASE-1001-r1"],
        ["redrive", "acme-CASE-1001-r1"],
        ["redrive", "--case", "CASE-1001"],
        ["recon", "show", "rec-nope"],
        ["recon", "resolve", "rec-nope", "--outcome", "applied", "--by", "ops", "--note", "n"],
        ["graph", "--execution", "CASE-1001"],
    ],
)
def test_unknown_names_on_an_empty_home(home: StateHome, args: list[str]) -> None:
    result = cli(home, *args)
    assert result.code == 2, result.err
    assert len(result.err.strip().splitlines()) == 1
    assert files(home) == []


def test_reads_of_an_empty_home_write_nothing(home: StateHome) -> None:
    result = cli(home, "recon", "list", "--json")
    assert (result.code, result.json()) == (0, {"items": [], "next_token": None})
    assert files(home) == []


def test_bad_faults_after_a_good_start_change_nothing(home: StateHome, tmp_path: Path) -> None:
    case = write_case(tmp_path)
    assert cli(home, "start", str(case)).code == 0
    before = files(home)
    bad = write_faults(tmp_path, {"service": "payments", "operation": "refund", "fault": "boom"})
    result = cli(home, "start", str(case), "--faults", str(bad))
    assert result.code == 2
    assert files(home) == before
