"""Hostile input: generated and hand-written bad case files, hostile handler events, broken
and locked state files. Each is refused with one line naming the problem; nothing is written.

"Nothing written" is checked from outside: the row counts of every table in a home that
already holds a finished case stay the same, and a fresh home is not even created.
"""

from __future__ import annotations

import copy
import json
import os
import socket
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from stepsaga._project.home import StateHome
from stepsaga.errors import InvalidInputError
from tests.framework.functional.cli_support import case_data, cli, files, row_counts, write_json
from tests.framework.unit.handlers.helpers import (
    World,
    compensation_event,
    make_world,
    step_event,
)

pytestmark = pytest.mark.slow

# --- case files ------------------------------------------------------------------------

#: The example case: every one of its fields is required, so removing any or giving it a
#: wrong type must be refused.
VALID = case_data()


def leaves(value: Any, prefix: tuple[str | int, ...] = ()) -> Iterator[tuple[str | int, ...]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from leaves(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from leaves(item, (*prefix, index))
    else:
        yield prefix


def objects(value: Any, prefix: tuple[str | int, ...] = ()) -> Iterator[tuple[str | int, ...]]:
    if isinstance(value, dict):
        yield prefix
        for key, item in value.items():
            yield from objects(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from objects(item, (*prefix, index))


LEAVES = sorted(leaves(VALID), key=str)
OBJECTS = sorted(objects(VALID), key=str)


def get(data: Any, path: tuple[str | int, ...]) -> Any:
    for part in path:
        data = data[part]
    return data


def put(data: Any, path: tuple[str | int, ...], value: Any) -> None:
    get(data, path[:-1])[path[-1]] = value


STRING_LEAVES = [path for path in LEAVES if isinstance(get(VALID, path), str)]
NOT_A_CURRENCY = ["QQQ", "ZZZ", "ABC", "USX", "EURO", "$", ""]
BAD_AMOUNTS = ["-5.00", "0", "0.00", "20.001", "1e30", "NaN", "Infinity", "20,00", " ", "--1"]
INVALID_UTF8 = [b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf0\x28\x8c\x28", b"\x80"]


def encode(data: Any) -> bytes:
    return json.dumps(data, ensure_ascii=False).encode()


@st.composite
def bad_case_files(draw: st.DrawFn) -> tuple[str, bytes, str | None]:
    """(what was done, the file's bytes, a word the error line must contain or None)."""
    data = copy.deepcopy(VALID)
    kind = draw(
        st.sampled_from(
            [
                "missing",
                "unknown",
                "wrong type",
                "amount",
                "currency",
                "huge string",
                "invalid utf-8",
                "deeply nested",
                "truncated",
                "not an object",
                "blank",
            ]
        )
    )
    if kind == "missing":
        path = draw(st.sampled_from(LEAVES + [p for p in OBJECTS if p]))
        parent = get(data, path[:-1])
        if isinstance(parent, list):
            parent.clear()  # an empty list is as wrong as a missing field
        else:
            del parent[path[-1]]
        return kind, encode(data), str(path[0])
    if kind == "unknown":
        where = draw(st.sampled_from(OBJECTS))
        name = draw(
            st.one_of(
                st.sampled_from(["colour", "Refund", "amount2", "__proto__"]),
                st.text(min_size=1, max_size=300),
            )
        )
        target = get(data, where)
        if name in target:
            name += "_extra"
        target[name] = draw(st.sampled_from([1, "x", None, [], {}]))
        return kind, encode(data), str(where[0]) if where else None
    if kind == "wrong type":
        path = draw(st.sampled_from(LEAVES))
        put(data, path, draw(st.sampled_from([[], {}, None, True, ["x"], {"a": 1}])))
        return kind, encode(data), str(path[0])
    if kind == "amount":
        data["refund"]["amount"] = draw(st.sampled_from(BAD_AMOUNTS))
        if data["refund"]["amount"] == "20.001" and draw(st.booleans()):
            data["refund"].update(amount="1.5", currency="JPY")  # JPY has no minor unit
        return kind, encode(data), "refund"
    if kind == "currency":
        data["refund"]["currency"] = draw(st.sampled_from(NOT_A_CURRENCY))
        return kind, encode(data), "refund"
    if kind == "huge string":
        path = draw(st.sampled_from(STRING_LEAVES))
        size = draw(st.sampled_from([300, 5_000, 40_000, 70_000]))
        put(data, path, draw(st.sampled_from(["A", "é", "\u202e", "\x00"])) * size)
        return kind, encode(data), None if size >= 40_000 else str(path[0])
    if kind == "invalid utf-8":
        raw = encode(data)
        at = draw(st.integers(0, len(raw)))
        return kind, raw[:at] + draw(st.sampled_from(INVALID_UTF8)) + raw[at:], "UTF-8"
    if kind == "deeply nested":
        path = draw(st.sampled_from(LEAVES))
        depth = draw(st.sampled_from([500, 5_000, 40_000]))
        raw = encode(data).replace(
            json.dumps(get(data, path), ensure_ascii=False).encode(),
            b"[" * depth + b"1" + b"]" * depth,
            1,
        )
        return kind, raw, None
    if kind == "truncated":
        raw = encode(data)
        return kind, raw[: draw(st.integers(1, len(raw) - 1))], None
    if kind == "not an object":
        value = draw(st.one_of(st.lists(st.integers(), max_size=3), st.integers(), st.text()))
        return kind, json.dumps(value).encode(), "JSON object"
    return kind, draw(st.sampled_from([b"", b" ", b"\n\n", b"\t \r\n"])), "empty"


@pytest.fixture(scope="module")
def busy_home(tmp_path_factory: pytest.TempPathFactory) -> tuple[StateHome, Path]:
    """A home that already ran a case to completion, and its row counts."""
    root = tmp_path_factory.mktemp("hostile")
    home = StateHome(root / "home")
    case = write_json(root / "good.json", case_data("CASE-0001"))
    assert cli(home, "start", str(case), "--json").json()["outcome"] == "completed"
    return home, root


def assert_one_line_refusal(code: int, out: str, err: str, says: str | None) -> str:
    assert code == 2, err
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err[:2000]
    line = lines[0]
    assert line.startswith("error: "), line
    assert "Traceback" not in err
    assert len(line) < 1000, f"the refusal echoes the input ({len(line)} chars)"
    if says is not None:
        assert says in line, (says, line)
    return line


@settings(
    max_examples=250,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(bad=bad_case_files())
def test_a_generated_bad_case_file_is_one_line_and_writes_nothing(
    busy_home: tuple[StateHome, Path], bad: tuple[str, bytes, str | None]
) -> None:
    home, root = busy_home
    kind, raw, says = bad
    path = root / "bad.json"
    path.write_bytes(raw)
    before = row_counts(home)

    result = cli(home, "start", str(path), "--json")

    assert_one_line_refusal(result.code, result.out, result.err, says)
    assert row_counts(home) == before, kind


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda root: root, "is a directory"),
        (lambda root: root / "missing.json", "no such file"),
        (lambda root: Path("/dev/zero"), "is a character device, not a regular file"),
    ],
    ids=["directory", "missing", "endless device"],
)
def test_not_a_case_file_at_all(tmp_path: Path, make: Any, says: str) -> None:
    home = StateHome(tmp_path / "home")
    path = make(tmp_path)
    if str(path) == "/dev/zero" and not path.exists():
        pytest.skip("no /dev/zero")

    result = cli(home, "start", str(path))

    assert_one_line_refusal(result.code, result.out, result.err, says)
    assert files(home) == []


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        (b"\xff\xfe{}", "UTF-8"),
        (b"[" * 50_000 + b"]" * 50_000, "faults"),
        (b'{"faults": [' + b'{"service": "payments"},' * 5_000 + b"{}]}", "faults"),
        (b'{"faults": "all of them"}', "faults"),
    ],
    ids=["invalid utf-8", "deeply nested", "huge", "wrong type"],
)
def test_a_hostile_faults_file(tmp_path: Path, raw: bytes, says: str) -> None:
    home = StateHome(tmp_path / "home")
    faults = tmp_path / "faults.json"
    faults.write_bytes(raw)
    case = write_json(tmp_path / "case.json", case_data())

    result = cli(home, "start", str(case), "--faults", str(faults))

    assert_one_line_refusal(result.code, result.out, result.err, says)
    assert files(home) == []


# --- handler events ----------------------------------------------------------------------

ORIGINAL = {
    "action_key": "acme:CASE-1001:r1:reserve_stock",
    "status": "COMPLETED",
    "result": {"reservation_id": "acme:CASE-1001:r1:reserve_stock"},
    "replayed": False,
}
EVENTS: list[tuple[str, dict[str, Any]]] = [
    ("ReserveStock", step_event("ReserveStock")),
    ("RefundPayment", step_event("RefundPayment")),
    ("CreateShipment", step_event("CreateShipment")),
    ("ReleaseReservation", compensation_event(ORIGINAL)),
]
#: Values no identifier, amount or code accepts.
HOSTILE = [
    "x" * 1_000_000,
    "CASE-1\n001",
    "\ud800",
    "../../etc/passwd",
    "CASE\x001001",
    "",
    " ",
    -1,
    10**30,
    float("nan"),
    [[[[[[[[[[[]]]]]]]]]]],
    {"$ne": None},
]
#: Event fields that identify or price the action (each refuses every hostile value).
TARGETS = {
    "tenant_id",
    "case_id",
    "revision",
    "approved_at",
    "params.payment_id",
    "params.amount",
    "params.currency",
    "params.sku",
    "params.quantity",
    "params.reference",
}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    built = make_world(Path(tmp_path_factory.mktemp("events")))
    yield built
    built.deps.close()


def test_every_hostile_event_value_is_invalid_input_and_claims_nothing(world: World) -> None:
    """Every event x every identifying or pricing field x every hostile value (exhaustive:
    276 handler calls)."""
    tried = 0
    for function, valid in EVENTS:
        for target in sorted(TARGETS):
            *parents, last = target.split(".")
            for value in HOSTILE:
                event = copy.deepcopy(valid)
                node = event
                for part in parents:
                    node = node[part]
                if last not in node:
                    continue  # this event has no such field
                node[last] = value

                with pytest.raises(InvalidInputError) as caught:
                    world.run(function, event)

                where = (function, target, repr(value)[:40])
                assert not caught.value.retryable, where
                assert "\n" not in caught.value.message, where
                assert len(caught.value.message) < 1000, ("the error echoes the value", where)
                tried += 1
    assert tried > 250
    assert world.ledger.list() == []
    assert world.effects() == []


# --- broken and locked state files --------------------------------------------------------

STORES = ("ledger", "executions", "services")
#: Commands an operator runs against a home; each needs some of the stores.
COMMANDS = [
    ["start", "{case}"],
    ["status", "CASE-0001"],
    ["redrive", "acme-CASE-0001-r1"],
    ["recon", "list"],
    ["ledger", "list"],
    ["sim", "effects"],
]


def finished_home(root: Path) -> StateHome:
    root.mkdir(parents=True, exist_ok=True)
    home = StateHome(root / "home")
    case = write_json(root / "good.json", case_data("CASE-0001"))
    assert cli(home, "start", str(case)).code == 0
    return home


def corrupt(path: Path) -> None:
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    with path.open("r+b") as handle:
        handle.write(b"this is no database, it is a chaos test " * 200)


@pytest.mark.parametrize("store", STORES)
def test_a_corrupted_store_is_one_clear_line(tmp_path: Path, store: str) -> None:
    home = finished_home(tmp_path)
    corrupt(home.root / f"{store}.sqlite3")
    new_case = write_json(tmp_path / "new.json", case_data("CASE-0002"))

    for command in COMMANDS:
        args = [part.format(case=new_case) for part in command]
        result = cli(home, *args)
        if result.code == 0:
            continue  # this command does not read the broken store
        assert result.code in (1, 2), (args, result.err)
        lines = result.err.splitlines()
        assert len(lines) == 1, (args, result.err)
        assert lines[0].startswith("error: "), (args, lines[0])
        assert "Traceback" not in result.err
        assert store in lines[0], (args, lines[0])  # names which store is broken


#: The tree under test, when ``PYTHONPATH`` names it: the ``stepsaga`` script of an editable
#: install would otherwise import whatever checkout the virtualenv was installed from.
_SOURCE = {"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}


def _stepsaga(home: StateHome, *args: str) -> subprocess.CompletedProcess[str]:
    executable = Path(sys.executable).parent / "stepsaga"
    env = {
        "STEPSAGA_HOME": str(home.root),
        "STEPSAGA_TIME_SCALE": "0",
        "PATH": "/usr/bin:/bin",
        **_SOURCE,
    }
    return subprocess.run(
        [str(executable), *args], capture_output=True, text=True, env=env, timeout=120
    )


def test_locked_stores_give_one_clear_line_or_a_redrivable_failure(tmp_path: Path) -> None:
    """Another process holds each store's write lock for longer than the busy timeout."""
    homes = {store: finished_home(tmp_path / store) for store in STORES}
    holders = []
    for store, home in homes.items():
        holder = sqlite3.connect(home.root / f"{store}.sqlite3", isolation_level=None)
        holder.execute("BEGIN EXCLUSIVE")
        holders.append(holder)
    cases = {
        store: write_json(tmp_path / f"{store}-new.json", case_data("CASE-0002"))
        for store in STORES
    }
    try:
        running = {
            store: subprocess.Popen(
                [
                    str(Path(sys.executable).parent / "stepsaga"),
                    "start",
                    str(cases[store]),
                    "--json",
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env={
                    "STEPSAGA_HOME": str(homes[store].root),
                    "STEPSAGA_TIME_SCALE": "0",
                    **_SOURCE,
                },
            )
            for store in STORES
        }
        done = {store: process.communicate(timeout=120) for store, process in running.items()}
    finally:
        for holder in holders:
            holder.execute("ROLLBACK")
            holder.close()

    for store, (out, err) in done.items():
        code = running[store].returncode
        print(f"{store} locked: exit {code}: {err.strip() or json.loads(out)['cause']}")
        assert "Traceback" not in err, err
        if code == 0:
            # The saga met the outage at a step: failed there, redrivable, nothing applied.
            view = json.loads(out)
            assert (view["outcome"], view["redriveStatus"]) == ("failed", "REDRIVABLE"), store
            assert "locked" in (view["cause"] or ""), view["cause"]
            continue
        assert code == 1, (store, err)
        lines = err.splitlines()
        assert len(lines) == 1, err
        assert lines[0].startswith("error: "), err
        assert "locked" in lines[0], lines[0]
        assert store in lines[0] or "services" in lines[0], lines[0]
    # Once the lock is gone, the failed case is redriven to completion.
    for store, home in homes.items():
        if running[store].returncode == 0:
            redriven = _stepsaga(home, "redrive", "acme-CASE-0002-r1", "--json")
            assert json.loads(redriven.stdout)["outcome"] == "completed", redriven.stderr


# --- duplicate keys, timestamps, special files, oversized ranges and numbers ------------------
#
# Each class against the busy home: exit 2, one line on stderr, and every store's row counts
# unchanged. Cases use a new case id, so a file that were accepted would add rows.

NEW_CASE = case_data("CASE-0002")
HOSTILE_SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def encode_with_duplicate(
    value: Any, where: tuple[str | int, ...], key: str, again: Any, at: int
) -> str:
    """``value`` as JSON text in which the object at ``where`` holds ``key`` twice (the
    repeat inserted at position ``at`` of its members); ``json.dumps`` cannot write that."""
    if isinstance(value, dict):
        members = [
            f"{json.dumps(k)}: {encode_with_duplicate(v, where[1:], key, again, at)}"
            if where and where[0] == k
            else f"{json.dumps(k)}: {json.dumps(v)}"
            for k, v in value.items()
        ]
        if not where:
            members.insert(min(at, len(members)), f"{json.dumps(key)}: {json.dumps(again)}")
            if key not in value:  # a key that appears twice, both times new
                members.insert(0, f"{json.dumps(key)}: {json.dumps(again)}")
        return "{" + ", ".join(members) + "}"
    if isinstance(value, list):
        return (
            "["
            + ", ".join(
                encode_with_duplicate(v, where[1:], key, again, at)
                if where and where[0] == i
                else json.dumps(v)
                for i, v in enumerate(value)
            )
            + "]"
        )
    return json.dumps(value)


@st.composite
def duplicated(draw: st.DrawFn, data: Any) -> tuple[str, str]:
    """(file text with one key repeated somewhere, the key)."""
    where = draw(st.sampled_from(sorted(objects(data), key=str)))
    target = get(data, where)
    key = draw(st.sampled_from(sorted(target)) if target else st.text(min_size=1, max_size=8))
    again: Any = draw(
        st.one_of(
            st.just(target.get(key)),  # the same value again is refused too
            st.sampled_from(["evil", 2, None, {"nested": [1]}, []]),
        )
    )
    text = encode_with_duplicate(data, where, key, again, draw(st.integers(0, 20)))
    return text, key


def _assert_refused_and_unchanged(
    home: StateHome, before: dict[str, int], code: int, out: str, err: str, says: str | None
) -> None:
    assert_one_line_refusal(code, out, err, says)
    assert row_counts(home) == before


@HOSTILE_SETTINGS
@given(data=st.data())
def test_a_duplicate_key_at_any_depth_of_a_case_file(
    busy_home: tuple[StateHome, Path], data: st.DataObject
) -> None:
    home, root = busy_home
    text, key = data.draw(duplicated(NEW_CASE))
    path = root / "duplicate.json"
    path.write_text(text)
    before = row_counts(home)
    result = cli(home, "start", str(path), "--json")
    plain = key.isascii() and key.replace("_", "").replace("-", "").isalnum()
    says = f"duplicate key {key} in " if plain and len(key) <= 40 else "duplicate key"
    _assert_refused_and_unchanged(home, before, result.code, result.out, result.err, says)


FAULTS = {
    "faults": [
        {"service": "payments", "operation": "refund", "case_id": "CASE-0002", "fault": "reject"},
        {"service": "shipping", "operation": "create_shipment", "attempt": 1, "fault": "throttle"},
    ]
}


@HOSTILE_SETTINGS
@given(data=st.data())
def test_a_duplicate_key_at_any_depth_of_a_faults_file(
    busy_home: tuple[StateHome, Path], data: st.DataObject
) -> None:
    home, root = busy_home
    text, _ = data.draw(duplicated(FAULTS))
    faults = root / "duplicate-faults.json"
    faults.write_text(text)
    case = write_json(root / "new.json", NEW_CASE)
    before = row_counts(home)
    result = cli(home, "start", str(case), "--faults", str(faults))
    _assert_refused_and_unchanged(
        home, before, result.code, result.out, result.err, "duplicate key"
    )


MOCK_CONFIG = json.loads(
    (
        Path(__file__).resolve().parents[3] / "examples/mock-config/replacement-order.json"
    ).read_text()
)


@HOSTILE_SETTINGS
@given(data=st.data())
def test_a_duplicate_key_at_any_depth_of_a_mock_config(
    busy_home: tuple[StateHome, Path], data: st.DataObject
) -> None:
    home, root = busy_home
    text, _ = data.draw(duplicated(MOCK_CONFIG))
    mock = root / "duplicate-mock.json"
    mock.write_text(text)
    case = write_json(root / "new.json", NEW_CASE)
    test_case = next(iter(MOCK_CONFIG["StateMachines"]["replacement-order"]["TestCases"]))
    before = row_counts(home)
    result = cli(home, "start", str(case), "--mock-config", str(mock), "--test-case", test_case)
    _assert_refused_and_unchanged(
        home, before, result.code, result.out, result.err, "duplicate key"
    )


def _edge_timestamps() -> st.SearchStrategy[str]:
    """Date-times outside what a case may carry: at the ends of the calendar, at the widest
    offsets, just past the clock skew, just past the retention window, and anywhere else
    outside the window. Relative ones are computed when drawn (the clock moves on)."""
    offsets = st.integers(-(23 * 60 + 59), 23 * 60 + 59).map(lambda m: timedelta(minutes=m))
    calendar_edges = st.sampled_from(
        [
            "0001-01-01T00:00:00+01:00",
            "0001-01-01T00:00:00Z",
            "0001-01-01T00:00:00-23:59",
            "0999-12-31T23:59:59Z",
            "1000-01-01T00:00:00+00:01",
            "9998-12-31T23:59:59-00:01",
            "9999-12-31T23:59:59Z",
            "9999-12-31T23:59:59-01:00",
            "9999-12-31T00:00:00+23:59",
        ]
    )
    from_now = st.sampled_from(
        [
            timedelta(minutes=5, seconds=30),
            timedelta(days=1),
            timedelta(days=365),
            -timedelta(days=30),
            -timedelta(days=30, seconds=1),
            -timedelta(days=3650),
        ]
    )
    anywhere = st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30))

    def outside(moment: datetime) -> bool:
        """Outside the window by more than a day, so no offset brings it back in."""
        now = datetime.now(UTC).replace(tzinfo=None)
        return not now - timedelta(days=31) <= moment <= now + timedelta(days=1, minutes=5)

    return st.one_of(
        calendar_edges,
        from_now.map(lambda d: (datetime.now(UTC).replace(microsecond=0) + d).isoformat()),
        st.builds(
            lambda m, o: m.replace(tzinfo=timezone(o)).isoformat(),
            anywhere.filter(outside),
            offsets,
        ),
    )


@HOSTILE_SETTINGS
@given(approved_at=_edge_timestamps())
def test_timestamps_at_every_edge_are_refused(
    busy_home: tuple[StateHome, Path], approved_at: str
) -> None:
    home, root = busy_home
    case = copy.deepcopy(NEW_CASE)
    case["approval"]["approved_at"] = approved_at
    path = write_json(root / "edge-time.json", case)
    before = row_counts(home)
    result = cli(home, "start", str(path), "--json")
    _assert_refused_and_unchanged(
        home, before, result.code, result.out, result.err, "approval.approved_at: "
    )


def _run_entry(home: StateHome, *args: str) -> subprocess.CompletedProcess[str]:
    """The real entry point with a timeout: a FIFO used to block ``open()`` forever."""
    return subprocess.run(
        [sys.executable, "-c", "from stepsaga.cli._app import main; main()", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "STEPSAGA_HOME": str(home.root), "STEPSAGA_TIME_SCALE": "0"},
        timeout=30,
        check=False,
    )


def _special(root: Path, kind: str) -> tuple[Path, socket.socket | None]:
    name = kind.replace("/", "-").replace(" ", "-")
    path = root / f"special{name}.json"
    for stale in (path, root / f"special{name}-target"):
        if stale.is_symlink() or stale.exists():
            stale.unlink() if not stale.is_dir() else stale.rmdir()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "link to a fifo":
        os.mkfifo(root / f"special{name}-target")
        path.symlink_to(root / f"special{name}-target")
    elif kind == "socket":
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(str(path))
        return path, server
    elif kind == "directory":
        path.mkdir()
    else:
        path.symlink_to(kind)  # a device
    return path, None


SPECIAL = ["fifo", "link to a fifo", "socket", "directory", "/dev/null", "/dev/zero", "/dev/tty"]


@pytest.mark.parametrize("role", ["case", "--faults", "--mock-config"])
@pytest.mark.parametrize("kind", SPECIAL)
def test_special_files_in_every_role_are_refused_without_hanging(
    busy_home: tuple[StateHome, Path], role: str, kind: str
) -> None:
    home, root = busy_home
    if kind.startswith("/dev/") and not Path(kind).exists():
        pytest.skip(f"no {kind}")
    special, server = _special(root, kind)
    case = str(write_json(root / "new.json", NEW_CASE))
    args = {
        "case": ["start", str(special)],
        "--faults": ["start", case, "--faults", str(special)],
        "--mock-config": ["start", case, "--mock-config", str(special), "--test-case", "X"],
    }[role]
    before = row_counts(home)
    try:
        done = _run_entry(home, *args)
    finally:
        if server is not None:
            server.close()
    says = "is a directory" if kind == "directory" else "not a regular file"
    _assert_refused_and_unchanged(home, before, done.returncode, done.stdout, done.stderr, says)


@st.composite
def oversized_ranges(draw: st.DrawFn) -> str:
    digits = draw(st.integers(10, 5000))
    big = draw(st.sampled_from(["9", "1", "5"])) * digits
    if digits == 10:
        big = str(10**9 + draw(st.integers(0, 8 * 10**9)))
    return draw(st.sampled_from([big, f"0-{big}", f" 0 - {big} ", f"{big}-{big}"]))


@HOSTILE_SETTINGS
@given(key=oversized_ranges())
def test_oversized_mock_ranges_are_refused(busy_home: tuple[StateHome, Path], key: str) -> None:
    home, root = busy_home
    config = copy.deepcopy(MOCK_CONFIG)
    name = next(iter(config["MockedResponses"]))
    first = next(iter(config["MockedResponses"][name].values()))
    config["MockedResponses"][name] = {key: first}
    mock = write_json(root / "oversized-mock.json", config)
    case = write_json(root / "new.json", NEW_CASE)
    before = row_counts(home)
    result = cli(home, "start", str(case), "--mock-config", str(mock), "--test-case", "X")
    _assert_refused_and_unchanged(
        home, before, result.code, result.out, result.err, "above the maximum"
    )


NUMBER_LEAVES = [path for path in leaves(NEW_CASE) if isinstance(get(NEW_CASE, path), int)]
NUMBER_LEAVES += [("refund", "amount")]


@st.composite
def oversized_numbers(draw: st.DrawFn) -> tuple[str, str]:
    """(the case file with one number made huge, how it was made huge)."""
    path = draw(st.sampled_from(NUMBER_LEAVES))
    kind = draw(st.sampled_from(["digits", "exponent", "fraction", "text", "negative"]))
    size = draw(st.integers(29, 6000))
    literal = {
        "digits": "9" * size,
        "exponent": f"1e{size}",
        "fraction": "0." + "0" * size + "1",
        "text": json.dumps("9" * min(size, 40) + ".00"),
        "negative": "-" + "9" * size,
    }[kind]
    marker = "__HUGE__"
    data = copy.deepcopy(NEW_CASE)
    put(data, path, marker)
    return json.dumps(data).replace(json.dumps(marker), literal), f"{kind} at {path}"


@HOSTILE_SETTINGS
@given(bad=oversized_numbers())
def test_oversized_numbers_are_refused(
    busy_home: tuple[StateHome, Path], bad: tuple[str, str]
) -> None:
    home, root = busy_home
    text, how = bad
    note(how)
    path = root / "huge-number.json"
    path.write_text(text)
    before = row_counts(home)
    result = cli(home, "start", str(path), "--json")
    _assert_refused_and_unchanged(home, before, result.code, result.out, result.err, None)


# --- "-" (stdin) and the listing's flags ------------------------------------------------------


@HOSTILE_SETTINGS
@given(bad=bad_case_files())
def test_a_bad_case_on_stdin_is_refused_as_the_same_file_is(
    busy_home: tuple[StateHome, Path], bad: tuple[str, bytes, str | None]
) -> None:
    home, root = busy_home
    kind, raw, says = bad
    note(kind)
    path = root / "bad-stdin.json"
    path.write_bytes(raw)
    before = row_counts(home)
    from_file = cli(home, "start", str(path))
    from_stdin = cli(home, "start", "-", stdin=raw)
    _assert_refused_and_unchanged(
        home, before, from_stdin.code, from_stdin.out, from_stdin.err, says
    )
    assert from_stdin.err == from_file.err.replace(str(path), "<stdin>")


FLAG_TEXT = st.one_of(
    st.text(max_size=60),
    st.sampled_from(["", " ", "\n", "\x00", "6h", "1e9d", "9" * 400 + "w", "2026-02-30", "-1s"]),
)


@HOSTILE_SETTINGS
@given(
    flag=st.sampled_from(
        ["--since", "--tenant", "--status", "--outcome", "--next-token", "--saga"]
    ),
    value=FLAG_TEXT,
    limit=st.one_of(st.none(), st.integers(-(10**30), 10**30)),
)
def test_list_flags_are_answered_or_refused_in_one_line(
    busy_home: tuple[StateHome, Path], flag: str, value: str, limit: int | None
) -> None:
    home, _ = busy_home
    before = row_counts(home)
    args = ["list", f"{flag}={value}", "--json"] + ([] if limit is None else [f"--limit={limit}"])
    result = cli(home, *args)
    if result.code == 0:
        assert set(result.json()) == {"executions", "nextToken"}
    else:
        assert_one_line_refusal(result.code, result.out, result.err, None)
    assert row_counts(home) == before
