"""Hostile input: generated and hand-written bad case files, hostile handler events, broken
and locked state files. Each is refused with one line naming the problem; nothing is written.

"Nothing written" is checked from outside: the row counts of every table in a home that
already holds a finished case stay the same, and a fresh home is not even created.
"""

from __future__ import annotations

import copy
import json
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stepsaga.errors import InvalidInputError
from stepsaga.home import StateHome
from tests.functional.cli_support import case_data, cli, files, row_counts, write_json
from tests.unit.handlers.helpers import (
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
        (lambda root: Path("/dev/zero"), "larger than"),
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


def _stepsaga(home: StateHome, *args: str) -> subprocess.CompletedProcess[str]:
    executable = Path(sys.executable).parent / "stepsaga"
    env = {"STEPSAGA_HOME": str(home.root), "STEPSAGA_TIME_SCALE": "0", "PATH": "/usr/bin:/bin"}
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
                env={"STEPSAGA_HOME": str(homes[store].root), "STEPSAGA_TIME_SCALE": "0"},
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
