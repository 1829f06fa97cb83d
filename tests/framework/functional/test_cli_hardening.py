"""Bad input through the CLI, class by class: duplicate keys, special files, mock-config
ranges, time scales, approval times, identities, ledger URLs and a home that is a file.
Each is exit 2, one line on stderr, and nothing written — in-process and, where typer's
own parsing is involved, through the real entry point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from stepsaga._project.home import StateHome
from tests.framework.functional.cli_support import (
    EXAMPLES,
    ROOT,
    case_data,
    cli,
    effects,
    files,
    row_counts,
    write_case,
    write_json,
)
from tests.framework.functional.test_cli_recon import _waiting_case

ENTRY = "from stepsaga.cli._app import main; main()"
MOCK = EXAMPLES / "mock-config" / "replacement-order.json"


def stepsaga(
    home: StateHome, *args: str, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """The real ``stepsaga`` entry point (one-line usage errors), with a timeout."""
    environment = {
        **os.environ,
        "STEPSAGA_HOME": str(home.root),
        "STEPSAGA_TIME_SCALE": "0",
        **(env or {}),
    }
    return subprocess.run(
        [sys.executable, "-c", ENTRY, *args],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def one_line(code: int, out: str, err: str, says: str) -> str:
    assert code == 2, err
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: "), lines[0]
    assert says in lines[0], (says, lines[0])
    return lines[0]


# --- duplicate keys --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "says"),
    [
        ('"tenant_id": "acme"', '"tenant_id": "acme", "tenant_id": "evil"', "tenant_id in the"),
        ('"revision": 1', '"revision": 1, "revision": 2', "revision in approval"),
        ('"quantity": 1}]', '"quantity": 1, "quantity": 9}]', "quantity in shipment.items.0"),
    ],
)
def test_a_case_file_with_a_duplicate_key_does_not_run(
    home: StateHome, tmp_path: Path, old: str, new: str, says: str
) -> None:
    path = tmp_path / "case.json"
    raw = json.dumps(case_data())
    assert old in raw
    path.write_text(raw.replace(old, new, 1))
    result = cli(home, "start", str(path))
    one_line(result.code, result.out, result.err, f"duplicate key {says}")
    assert files(home) == []


def test_a_faults_file_with_a_duplicate_key_does_not_run(home: StateHome, tmp_path: Path) -> None:
    faults = tmp_path / "faults.json"
    faults.write_text(
        '{"faults": [{"service": "payments", "operation": "refund", "fault": "reject",'
        ' "fault": "throttle"}]}'
    )
    result = cli(home, "start", str(write_case(tmp_path)), "--faults", str(faults))
    one_line(result.code, result.out, result.err, "duplicate key fault in faults.0")
    assert files(home) == []


def test_a_mock_config_with_a_duplicate_key_does_not_run(home: StateHome, tmp_path: Path) -> None:
    mock = tmp_path / "mock.json"
    mock.write_text('{"StateMachines": {}, "MockedResponses": {}, "StateMachines": {}}')
    result = cli(
        home, "start", str(write_case(tmp_path)), "--mock-config", str(mock), "--test-case", "X"
    )
    one_line(result.code, result.out, result.err, "duplicate key StateMachines")
    assert files(home) == []


# --- special files -----------------------------------------------------------------------


@pytest.mark.parametrize("role", ["case", "--faults", "--mock-config"])
def test_a_fifo_given_as_any_file_is_refused_at_once(
    home: StateHome, tmp_path: Path, role: str
) -> None:
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    case = str(write_case(tmp_path))
    args = {
        "case": ["start", str(fifo)],
        "--faults": ["start", case, "--faults", str(fifo)],
        "--mock-config": ["start", case, "--mock-config", str(fifo), "--test-case", "HappyPath"],
    }[role]
    done = stepsaga(home, *args, timeout=30)  # it used to block forever in open()
    one_line(done.returncode, done.stdout, done.stderr, "is a named pipe (FIFO)")
    assert files(home) == []


def test_a_device_given_as_the_case_is_refused(home: StateHome) -> None:
    result = cli(home, "start", "/dev/null")
    one_line(result.code, result.out, result.err, "is a character device, not a regular file")


# --- mock config ranges --------------------------------------------------------------------


def _mock_with(tmp_path: Path, key: str) -> Path:
    data = json.loads(MOCK.read_text())
    name = next(iter(data["MockedResponses"]))
    first = next(iter(data["MockedResponses"][name].values()))
    data["MockedResponses"][name] = {key: first}
    return write_json(tmp_path / "mock.json", data)


@pytest.mark.parametrize(
    ("key", "says"),
    [
        ("0-" + "9" * 40, "above the maximum"),
        ("0-99999999999", "above the maximum"),
        ("0-" + "9" * 5000, "above the maximum"),
    ],
    ids=["forty digits", "eleven digits", "five thousand digits"],
)
def test_a_huge_invocation_number_is_exit_2(
    home: StateHome, tmp_path: Path, key: str, says: str
) -> None:
    mock = _mock_with(tmp_path, key)
    result = cli(
        home, "start", str(write_case(tmp_path)), "--mock-config", str(mock), "--test-case", "X"
    )
    one_line(result.code, result.out, result.err, says)
    assert files(home) == []


def test_a_180_byte_config_with_a_huge_range_runs_without_expanding(
    home: StateHome, tmp_path: Path
) -> None:
    mock = tmp_path / "mock.json"
    mock.write_text(
        '{"StateMachines": {"replacement-order": {"TestCases": {"T": {"ReserveStock": "R"}}}},'
        ' "MockedResponses": {"R": {"0-300000000": {"Throw": {"Error": "Boom"}}}}}'
    )
    assert mock.stat().st_size < 200
    started = time.monotonic()
    done = stepsaga(
        home,
        "start",
        str(write_case(tmp_path)),
        "--mock-config",
        str(mock),
        "--test-case",
        "T",
        "--json",
        timeout=60,
    )  # expanded, the range was a list of 300 million entries (gigabytes)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "FAILED"
    assert time.monotonic() - started < 60


# --- time scale ----------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["1e308", "inf", "nan", "-1", "1001"])
def test_a_time_scale_out_of_range_is_one_line_through_the_entry_point(
    home: StateHome, tmp_path: Path, value: str
) -> None:
    done = stepsaga(home, "start", str(write_case(tmp_path)), "--time-scale", value)
    one_line(done.returncode, done.stdout, done.stderr, "--time-scale must be a number from 0")
    assert not home.root.exists()


@pytest.mark.parametrize("value", ["1e308", "inf", "nan", "-1", "1_000", "+1", "0x10", "1001"])
def test_a_time_scale_environment_out_of_range_is_one_line(
    home: StateHome, tmp_path: Path, value: str
) -> None:
    result = cli(home, "start", str(write_case(tmp_path)), env={"STEPSAGA_TIME_SCALE": value})
    one_line(result.code, result.out, result.err, "STEPSAGA_TIME_SCALE must be a number from 0")
    assert files(home) == []


def test_a_huge_time_scale_no_longer_aborts_an_execution(home: StateHome, tmp_path: Path) -> None:
    """``1e308`` used to pass, overflow the first retry's sleep and leave it ABORTED."""
    faults = EXAMPLES / "faults-throttled-refund.json"
    case = str(write_case(tmp_path))
    result = cli(home, "start", case, "--faults", str(faults), "--time-scale", "1e308")
    assert result.code == 2
    assert files(home) == []
    ok = cli(home, "start", case, "--faults", str(faults), "--time-scale", "0", "--json")
    assert ok.json()["outcome"] == "completed"


# --- approval times --------------------------------------------------------------------------


def _at(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.parametrize(
    ("approved_at", "says"),
    [
        (_at(datetime.now(UTC) + timedelta(days=3)), "is in the future"),
        (_at(datetime.now(UTC) - timedelta(days=31)), "retention window"),
        ("9999-12-31T00:00:00Z", "years 1000 to 9998"),
        ("0999-12-31T00:00:00Z", "years 1000 to 9998"),
        ("0001-01-01T00:00:00+01:00", "outside the range of dates"),
        ("9999-12-31T23:59:59-01:00", "outside the range of dates"),
    ],
)
def test_an_approval_time_outside_the_window_does_not_start(
    home: StateHome, tmp_path: Path, approved_at: str, says: str
) -> None:
    data = case_data()
    data["approval"]["approved_at"] = approved_at
    result = cli(home, "start", str(write_json(tmp_path / "case.json", data)))
    line = one_line(result.code, result.out, result.err, says)
    assert line.startswith("error: approval.approved_at: ")
    assert files(home) == []


# --- identities ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "who",
    ["ops\nforged line", "op\rs", "ops\u202eevil", "ops\x00", "ab", " x ", "op\u2028s", "o\tps"],
)
def test_approved_by_must_be_a_printable_identity(
    home: StateHome, tmp_path: Path, who: str
) -> None:
    data = case_data()
    data["approval"]["approved_by"] = who
    result = cli(home, "start", str(write_json(tmp_path / "case.json", data)))
    one_line(result.code, result.out, result.err, "approval.approved_by: ")
    assert files(home) == []


@pytest.mark.parametrize(
    ("who", "says"),
    [
        ("x", "--by: String should have at least 3 characters"),
        ("  x  ", "--by: String should have at least 3 characters"),
        ("ops\nforged", "--by: must not contain control or unassigned characters (found U+000A)"),
        ("o" * 255, "--by: String should have at most 254 characters"),
    ],
)
def test_recon_resolve_by_follows_the_same_rule(
    home: StateHome, tmp_path: Path, who: str, says: str
) -> None:
    item_id = _waiting_case(home, tmp_path)["open_items"][0]
    before = row_counts(home)
    result = cli(
        home, "recon", "resolve", item_id, "--outcome", "applied", "--by", who, "--note", "n"
    )
    one_line(result.code, result.out, result.err, says)
    assert row_counts(home) == before
    item = cli(home, "recon", "show", item_id, "--json").json()
    assert (item["status"], item["waiting"]) == ("OPEN", True)


def test_a_three_character_identity_resolves(home: StateHome, tmp_path: Path) -> None:
    item_id = _waiting_case(home, tmp_path)["open_items"][0]
    result = cli(
        home, "recon", "resolve", item_id, "--outcome", "applied", "--by", " ops ", "--note", "n"
    )
    assert result.code == 0, result.err
    item = cli(home, "recon", "show", item_id, "--json").json()
    assert item["resolved_by"] == "ops"
    assert effects(home)["create_shipment"] == 1


@pytest.mark.parametrize(
    ("note", "says"),
    [
        ("n" * 100_000, "--note: at most 1000 characters"),
        ("fine\nstopped by root: forged", "(found U+000A)"),
        ("paint \x1b[2J over", "(found U+001B)"),
        ("refund \u202edenifer", "(found U+202E)"),
        ("   ", "--note: must not be empty"),
    ],
)
def test_recon_resolve_note_follows_the_stop_note_rule(
    home: StateHome, tmp_path: Path, note: str, says: str
) -> None:
    item_id = _waiting_case(home, tmp_path)["open_items"][0]
    before = row_counts(home)
    result = cli(
        home, "recon", "resolve", item_id, "--outcome", "applied", "--by", "ops", "--note", note
    )
    one_line(result.code, result.out, result.err, says)
    assert row_counts(home) == before
    item = cli(home, "recon", "show", item_id, "--json").json()
    assert (item["status"], item["waiting"]) == ("OPEN", True)


@pytest.mark.parametrize("verb", [["list"], ["redrive", "--all-failed"]])
@pytest.mark.parametrize("since", ["99999999d", "999999999w", "3651d"])
def test_a_since_older_than_ten_years_is_one_line(
    home: StateHome, verb: list[str], since: str
) -> None:
    result = cli(home, *verb, "--since", since)
    one_line(result.code, result.out, result.err, f"--since: {since!r} is older than")


# --- ledger URLs and the home ------------------------------------------------------------------


@pytest.mark.parametrize("verb", [["list"], ["show", "acme:CASE-1:r1:refund_payment"], ["sweep"]])
@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("dynamodb://tbl?region=eu west 1", "region 'eu west 1' is not a region name"),
        ("dynamodb://tbl", "no AWS region"),
        ("dynamodb://t", "write dynamodb://TABLE"),
        ("dynamodb://tbl?region=eu-west-1&endpoint_url=http://bad host", "endpoint_url must be"),
        ("dynamodb://tbl?region=eu-west-1&endpoint_url=http://h:99999", "endpoint_url must be"),
        ("dynamodb://[::1", "Invalid IPv6 URL"),
        ("sqlite:///l.db?busy_timeout_ms=99999999999999999999", "busy_timeout_ms must be"),
    ],
)
def test_a_bad_ledger_url_is_one_line_not_a_traceback(
    home: StateHome, verb: list[str], url: str, says: str
) -> None:
    env = {"AWS_REGION": "", "AWS_DEFAULT_REGION": "", "AWS_CONFIG_FILE": "/nonexistent"}
    done = stepsaga(home, "ledger", *verb, "--url", url, env=env)
    one_line(done.returncode, done.stdout, done.stderr, says)
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("below", [False, True], ids=["a file", "below a file"])
@pytest.mark.parametrize(
    "args", [["ledger", "list"], ["status", "CASE-1001"], ["recon", "list"], ["start", "{case}"]]
)
def test_a_home_that_is_a_file_is_one_line(tmp_path: Path, args: list[str], below: bool) -> None:
    target = tmp_path / "not-a-folder"
    target.write_text("I am a file")
    home = StateHome(tmp_path / "unused")
    root = target / "home" if below else target
    case = str(write_case(tmp_path))
    done = stepsaga(home, *[a.format(case=case) for a in args], env={"STEPSAGA_HOME": str(root)})
    says = "lies below a file" if below else "is a file, not a folder"
    one_line(done.returncode, done.stdout, done.stderr, f"state home {root} {says}")
    assert target.read_text() == "I am a file"
