"""stepsaga side by side with DBOS (the nearest embedded peer), in one run.

Prints ratios measured in the same run, never asserts timings. Rounds are interleaved
(DBOS, then ours, per cell), and each ratio is quoted min/median/max over the rounds.

    .venv/bin/python bench/peers.py               # 3 rounds
    .venv/bin/python bench/peers.py --quick       # smaller N, 2 rounds (smoke run)

The workload is one 3-step saga (reserve stock → refund → create shipment) on two paths:
*happy* and *compensation* (the shipment is rejected: escalate the refund, release the
reservation). Sides:

* **DBOS 3.4.0** on SQLite: a ``@DBOS.workflow`` of ``@DBOS.step`` functions. A step is
  at-least-once (its output is checkpointed after it runs; a crash in between re-runs it),
  and nothing keys the effect downstream: there is no action ledger.
* **engine alone**: our ``LocalEngine`` on the compiled saga with trivial handlers: the
  AWS-shaped history (every state's entered/exited event, task scheduled/started/
  succeeded), one store.
* **``stepsaga start``'s path**: ``LocalBackend.start`` with the reference project's real
  handlers, ledger and simulated services (no process start-up). Each step is claimed in
  the ledger first (at most once per claim, the result recorded), then the service called.

Durability: DBOS *as shipped* uses SQLite's rollback journal with ``synchronous=FULL``;
ours as shipped is the engine on WAL + ``NORMAL`` (``$STEPSAGA_ENGINE_SYNCHRONOUS``) and the
ledger on WAL + ``FULL``. The *equal durability* rows put both on WAL + FULL, then both on
WAL + NORMAL. fsyncs (``fsync`` + ``fdatasync``, counted by ``bench/fsync_counter.c``
preloaded into this process) and transactions (``COMMIT``s and autocommitted writes, from
every SQLite connection's statement trace) are counted per workflow.

The start path runs in copies of a home that has lived (``LIVED``: 50k executions, 3,000
open reconciliation items of the case's tenant, 150k ledger records; ``--quick``: a fifth),
built once by bulk inserts: a fresh home per batch hid that lookups by case once grew with
the tenant's open items (#26).

Also measured in the same run: ``Ledger.perform``'s first call against a bare INSERT +
UPDATE (2 commits) on the same file with the same settings; store bytes per happy
execution; WAL bytes per happy start in the lived-in home; ``stepsaga status CASE_ID`` in
the lived-in home vs 1k executions; and CLI start-up (``python -m stepsaga status CASE_ID``)
against ``aws --version`` if the AWS CLI is installed, timing its real executable (a pyenv
or asdf shim adds 50-60 ms of its own).

The start path is printed next to its floor: the same one-row commits a happy start makes
(``FLOOR_COMMITS``), on three WAL files at the same ``synchronous``, with no other Python.
``--only SECTION`` (repeatable) runs some sections, e.g. ``--only cli --rounds 15``.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import logging
import os
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

_COUNTER_ENV = "STEPSAGA_BENCH_FSYNC_COUNTER"


def _preload_fsync_counter() -> None:
    """Re-run this script with ``fsync_counter.c`` preloaded (compiled once, if a C
    compiler is there); without one, fsyncs are reported as "n/a"."""
    if os.environ.get(_COUNTER_ENV) is not None:
        return
    compiler = shutil.which("cc") or shutil.which("gcc")
    library = Path(tempfile.gettempdir()) / f"stepsaga-fsync-counter-{os.getuid()}.so"
    env = dict(os.environ)
    env[_COUNTER_ENV] = ""
    if compiler is not None:
        source = Path(__file__).with_name("fsync_counter.c")
        built = subprocess.run(
            [compiler, "-shared", "-fPIC", "-O2", "-o", str(library), str(source), "-ldl"],
            capture_output=True,
            check=False,
        )
        if built.returncode == 0:
            env[_COUNTER_ENV] = str(library)
            env["LD_PRELOAD"] = " ".join(filter(None, [env.get("LD_PRELOAD"), str(library)]))
    os.execve(sys.executable, [sys.executable, *sys.argv], env)


# --- counters ---------------------------------------------------------------------------


class _Counting(sqlite3.Connection):
    """A connection that counts its commits; the store's own trace callback still runs."""

    commits = 0
    opened = 0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _Counting.opened += 1
        self._chained: Callable[[str], None] | None = None
        super().set_trace_callback(self._trace)

    def set_trace_callback(self, callback: Callable[[str], None] | None) -> None:  # type: ignore[override]
        self._chained = callback

    def _trace(self, sql: str) -> None:
        head = sql.lstrip()[:7].upper()
        if head.startswith(("COMMIT", "END")):
            _Counting.commits += 1
        elif head.startswith(("INSERT", "UPDATE", "DELETE", "REPLACE")) and not self.in_transaction:
            _Counting.commits += 1  # autocommit: a transaction of its own
        if self._chained is not None:
            self._chained(sql)


_real_connect = sqlite3.connect


def _connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
    kwargs.setdefault("factory", _Counting)
    conn: sqlite3.Connection = _real_connect(*args, **kwargs)
    return conn


sqlite3.connect = _connect  # type: ignore[assignment]
sqlite3.dbapi2.connect = _connect  # type: ignore[assignment]


@dataclass(frozen=True)
class Counts:
    fsyncs: int | None
    commits: int
    opened: int

    @staticmethod
    def now() -> Counts:
        path = os.environ.get(_COUNTER_ENV)
        fsyncs = None
        if path:
            lib = ctypes.CDLL(path)
            fsyncs = (
                ctypes.c_long.in_dll(lib, "stepsaga_fsyncs").value
                + ctypes.c_long.in_dll(lib, "stepsaga_fdatasyncs").value
            )
        return Counts(fsyncs, _Counting.commits, _Counting.opened)

    def __sub__(self, other: Counts) -> Counts:
        fsyncs = None
        if self.fsyncs is not None and other.fsyncs is not None:
            fsyncs = self.fsyncs - other.fsyncs
        return Counts(fsyncs, self.commits - other.commits, self.opened - other.opened)


@dataclass
class Cell:
    """Workflows/s of one side on one path, per round, and what one workflow cost."""

    rates: list[float] = field(default_factory=list)
    per_workflow: Counts | None = None
    n: int = 0

    def add(self, seconds: float, n: int, counts: Counts) -> None:
        self.rates.append(n / seconds)
        self.per_workflow = counts
        self.n = n

    def cost(self) -> str:
        if self.per_workflow is None or not self.n:
            return ""
        c, n = self.per_workflow, self.n
        fs = "n/a" if c.fsyncs is None else f"{c.fsyncs / n:.1f}"
        return (
            f"{fs} fsyncs, {c.commits / n:.1f} transactions, {c.opened / n:.1f} connections opened"
        )


def measure(run: Callable[[int], None], n: int) -> tuple[float, Counts]:
    before = Counts.now()
    started = time.perf_counter()
    run(n)
    elapsed = time.perf_counter() - started
    return elapsed, Counts.now() - before


def spread(values: list[float], unit: str = "x") -> str:
    if not values:
        return "n/a"
    return (
        f"{min(values):.2f}{unit} / {statistics.median(values):.2f}{unit} / {max(values):.2f}{unit}"
    )


# --- the saga on DBOS ---------------------------------------------------------------------

CASE: dict[str, Any] = json.loads((ROOT / "examples" / "case-clean.json").read_text())
_PRAGMAS: list[str] = []


class ShipmentRejectedError(Exception):
    """The DBOS saga's refusal (module level: DBOS pickles a step's exception)."""


def _dbos_setup() -> Any:
    """Register the DBOS workflow (once) and a connect hook that applies ``_PRAGMAS``."""
    import sqlalchemy
    from dbos import DBOS
    from sqlalchemy import event

    logging.getLogger("dbos").setLevel(logging.WARNING)

    @event.listens_for(sqlalchemy.engine.Engine, "connect")
    def _pragmas(dbapi_conn: Any, record: Any) -> None:
        for pragma in _PRAGMAS:
            dbapi_conn.execute(pragma)

    @DBOS.step()
    def reserve_stock(case: dict[str, Any]) -> dict[str, Any]:
        return {"reservation_id": f"RES-{case['case_id']}"}

    @DBOS.step()
    def refund_payment(case: dict[str, Any]) -> dict[str, Any]:
        return {"refund_id": f"RF-{case['case_id']}"}

    @DBOS.step()
    def create_shipment(case: dict[str, Any], reject: bool) -> dict[str, Any]:
        if reject:
            raise ShipmentRejectedError("shipping refused the address")
        return {"shipment_id": f"SH-{case['case_id']}"}

    @DBOS.step()
    def escalate_refund(case: dict[str, Any]) -> dict[str, Any]:
        return {"item": f"REC-{case['case_id']}"}

    @DBOS.step()
    def release_reservation(case: dict[str, Any]) -> dict[str, Any]:
        return {"released": True}

    @DBOS.workflow()
    def replacement_order(case: dict[str, Any], reject: bool) -> str:
        reserve_stock(case)
        refund_payment(case)
        try:
            create_shipment(case, reject)
        except ShipmentRejectedError:
            escalate_refund(case)
            release_reservation(case)
            return "COMPENSATED"
        return "SUCCEEDED"

    return replacement_order


class DbosSide:
    """One DBOS launch on a fresh SQLite file with the given PRAGMAs."""

    def __init__(self, workflow: Any, path: Path, pragmas: list[str]) -> None:
        from dbos import DBOS

        self.workflow = workflow
        self.path = path
        _PRAGMAS[:] = pragmas
        DBOS(config={"name": "bench", "system_database_url": f"sqlite:///{path}"})
        DBOS.launch()
        self.seq = 0

    def run(self, n: int, reject: bool) -> None:
        from dbos import SetWorkflowID

        expected = "COMPENSATED" if reject else "SUCCEEDED"
        for _ in range(n):
            self.seq += 1
            case = {**CASE, "case_id": f"CASE-{self.seq}"}
            with SetWorkflowID(f"acme-CASE-{self.seq}-r1"):
                outcome = self.workflow(case, reject)
            assert outcome == expected, outcome

    def close(self) -> None:
        from dbos import DBOS

        DBOS.destroy(destroy_registry=False)


# --- our sides --------------------------------------------------------------------------

FUNCTIONS = ["ReserveStock", "RefundPayment", "CreateShipment", "ReleaseReservation", "Reconcile"]


class BusinessRejectedError(Exception):
    """Named as the handlers' refusal, so the saga's Catch routes to compensation."""


def _trivial(event: Any, context: Any) -> Any:
    return {"action_key": "k", "status": "COMPLETED", "result": {}, "replayed": False}


def _rejecting(event: Any, context: Any) -> Any:
    raise BusinessRejectedError("shipping refused the address")


class EngineSide:
    """``LocalEngine`` alone: the compiled saga, trivial handlers, durable history."""

    def __init__(self, root: Path, synchronous: str) -> None:
        from stepsaga import StateHome
        from stepsaga.engine import LocalEngine
        from stepsaga.engine._engine import substitute
        from stepsaga.workflow import compile as compile_saga
        from workflows.replacement_order import saga

        names = {f"{f}FunctionArn": f"{f}Function" for f in FUNCTIONS}
        registry: dict[str, Any] = {f"{f}Function": _trivial for f in FUNCTIONS}
        rejecting = {**registry, "CreateShipmentFunction": _rejecting}
        home = StateHome(root)
        self.happy = LocalEngine(home, registry, time_scale=0, synchronous=synchronous)
        self.rejected = LocalEngine(home, rejecting, time_scale=0, synchronous=synchronous)
        self.arn = self.happy.create_state_machine(
            "replacement-order", substitute(compile_saga(saga), names)
        )
        self.seq = 0

    def run(self, n: int, reject: bool) -> None:
        engine = self.rejected if reject else self.happy
        expected = "FAILED" if reject else "SUCCEEDED"
        payload = json.dumps(CASE)
        for _ in range(n):
            self.seq += 1
            described = engine.start_execution(self.arn, f"case-{self.seq}", payload)
            assert described["status"] == expected, described["status"]

    def close(self) -> None:
        self.happy.close()
        self.rejected.close()


class StartSide:
    """``LocalBackend.start`` on the reference project (real handlers, ledger, simulated
    services); one backend for every start, as a long-running caller holds it, or with
    ``fresh`` a backend per start, as one ``stepsaga start`` process has."""

    def __init__(
        self,
        root: Path,
        synchronous: str | None,
        *,
        reject: bool,
        fresh: bool = False,
        one_file: bool = False,
    ) -> None:
        from services.faults import parse_faults
        from stepsaga import StateHome
        from stepsaga.backends import LocalBackend
        from workflows.case import parse_case
        from workflows.project import reference_project

        faults = None
        if reject:
            text = (ROOT / "examples" / "faults-shipment-rejected.json").read_text()
            faults = parse_faults(json.loads(text))
        project = reference_project(faults=faults, default_stock=10**9)

        def open_backend() -> LocalBackend:
            home = StateHome(root, one_file=one_file)
            return LocalBackend(home, project, engine_synchronous=synchronous)

        self.open = open_backend
        self.backend = open_backend()
        self.fresh = fresh
        self.parse = parse_case
        self.expected = "FAILED" if reject else "SUCCEEDED"
        self.seq = 0

    def run(self, n: int) -> None:
        for _ in range(n):
            self.seq += 1
            case = self.parse({**CASE, "case_id": f"CASE-{self.seq}"})
            if self.fresh:
                with self.open() as backend:
                    view = backend.start(case, time_scale=0)
            else:
                view = self.backend.start(case, time_scale=0)
            assert view.status == self.expected, view.status

    def close(self) -> None:
        self.backend.close()


class FloorSide:
    """The start path's floor: the same one-row commits a happy start makes (from its SQL
    trace: the engine 5 at its ``synchronous``, the simulated services 6 at ``NORMAL``, the
    ledger 6 at ``FULL``; ``FLOOR_COMMITS``), on three WAL files, and no other Python: what
    a start would cost if its Python were free (#26 item 5)."""

    def __init__(self, root: Path, engine_synchronous: str) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.dbs: dict[str, sqlite3.Connection] = {}
        for name, sync in (
            ("engine", engine_synchronous),
            ("services", "NORMAL"),
            ("ledger", "FULL"),
        ):
            db = _connect(root / f"{name}.sqlite3", isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(f"PRAGMA synchronous={sync}")
            db.execute("CREATE TABLE IF NOT EXISTS t (k TEXT PRIMARY KEY, n INTEGER, v TEXT)")
            self.dbs[name] = db
        self.seq = 0

    def run(self, n: int) -> None:
        value = json.dumps(CASE)
        for _ in range(n):
            self.seq += 1
            for name, commits in FLOOR_COMMITS.items():
                db = self.dbs[name]
                key = f"{name}-{self.seq}"
                db.execute("INSERT INTO t VALUES (?, 0, ?)", (key, value))
                for i in range(1, commits):
                    db.execute("UPDATE t SET n = ?, v = ? WHERE k = ?", (i, value, key))

    def close(self) -> None:
        for db in self.dbs.values():
            db.close()


#: Transactions per happy start by store (the SQL trace of ``LocalBackend.start``; the
#: bench prints the measured total next to the floor's).
FLOOR_COMMITS = {"engine": 5, "services": 6, "ledger": 6}


# --- the peer table -----------------------------------------------------------------------

WAL_FULL = ["PRAGMA journal_mode=WAL", "PRAGMA synchronous=FULL"]
WAL_NORMAL = ["PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL"]
MODES: dict[str, tuple[list[str], str]] = {
    # DBOS's PRAGMAs, and our engine's setting for the same durability.
    "as shipped": ([], "NORMAL"),
    "WAL + FULL": (WAL_FULL, "FULL"),
    "WAL + NORMAL": (WAL_NORMAL, "NORMAL"),
}
PATHS = {"happy": False, "compensation": True}


def peer_table(
    tmp: Path,
    rounds: int,
    n_dbos: int,
    n_engine: int,
    n_start: int,
    templates: tuple[Path, Path],
) -> None:
    """``templates``: the lived-in home with two files and with one (``one_file``)."""
    workflow = _registered_workflow()

    def lived_root(name: str, one_file: bool) -> Path:
        """A copy of the lived-in home for one start side (it writes to it)."""
        root = tmp / name
        shutil.copytree(templates[one_file], root)
        return root

    cells: dict[tuple[str, str, str], Cell] = {}
    ratios: dict[tuple[str, str, str], list[float]] = {}

    def cell(side: str, mode: str, path: str) -> Cell:
        return cells.setdefault((side, mode, path), Cell())

    def ratio(key: tuple[str, str, str], ours: Cell, dbos: Cell) -> None:
        ratios.setdefault(key, []).append(ours.rates[-1] / dbos.rates[-1])

    # Warm every code path (imports, caches) outside the measured rounds.
    warm = DbosSide(workflow, tmp / "warm-dbos.sqlite3", [])
    warm.run(5, False)
    warm.run(5, True)
    warm.close()
    for reject in (False, True):
        engine = EngineSide(tmp / f"warm-engine-{reject}", "NORMAL")
        engine.run(5, reject)
        engine.close()
        start = StartSide(tmp / f"warm-start-{reject}", None, reject=reject)
        start.run(3)
        start.close()

    for r in range(rounds):
        for mode, (pragmas, synchronous) in MODES.items():
            dbos = DbosSide(workflow, tmp / f"dbos-{r}-{mode.replace(' ', '')}.sqlite3", pragmas)
            for path, reject in PATHS.items():
                _add(cell("dbos", mode, path), dbos.run, reject, n_dbos)
            dbos.close()
            if mode != "as shipped":
                engine = EngineSide(tmp / f"engine-{r}-{synchronous}-{mode[:3]}", synchronous)
                for path, reject in PATHS.items():
                    _add(cell("engine", mode, path), engine.run, reject, n_engine)
                    ratio(
                        ("engine alone", mode, path),
                        cells["engine", mode, path],
                        cells["dbos", mode, path],
                    )
                engine.close()
            if mode != "WAL + NORMAL":
                variants = (
                    {"start": None, "start, new backend each": None, "start, one file": None}
                    if mode == "as shipped"
                    else {
                        "start": None,
                        "start engine FULL": "FULL",
                        "start one file, engine FULL": "FULL",
                    }
                )
                for label, sync in variants.items():
                    one_file = "one file" in label
                    if label != "start, new backend each" and not one_file:
                        floor = FloorSide(
                            tmp / f"floor-{r}-{mode[:3]}-{label[-4:]}", sync or "NORMAL"
                        )
                        elapsed, counts = measure(floor.run, n_start)
                        floor.close()
                        cell(f"{label} floor", mode, "happy").add(elapsed, n_start, counts)
                    for path, reject in PATHS.items():
                        name = f"{label}-{r}-{mode[:3]}-{path}".replace(" ", "")
                        side = StartSide(
                            lived_root(name.replace(",", ""), one_file),
                            sync,
                            reject=reject,
                            fresh=label.endswith("each"),
                            one_file=one_file,
                        )
                        elapsed, counts = measure(side.run, n_start)
                        side.close()
                        c = cell(label, mode, path)
                        c.add(elapsed, n_start, counts)
                        ratio((label, mode, path), c, cells["dbos", mode, path])

    print("## Peers: workflows/s, DBOS 3.4.0 vs stepsaga (same 3-step saga)")
    print(f"{rounds} interleaved rounds; ratio = ours / DBOS, min / median / max")
    print(f"the start path runs in copies of a home that has lived ({templates[0].name})\n")
    for (who, mode, path), c in sorted(
        cells.items(), key=lambda kv: (kv[0][1], kv[0][2], kv[0][0])
    ):
        rates = spread(c.rates, "")
        print(f"  {who:18} {mode:13} {path:12} {rates:>28} wf/s   per workflow: {c.cost()}")
    print()
    labels = {
        "engine alone": "engine alone",
        "start": "`stepsaga start` path (ours as shipped: engine NORMAL, ledger FULL)",
        "start engine FULL": "`stepsaga start` path, engine FULL too",
        "start, new backend each": "`stepsaga start` path, a new LocalBackend per start",
        "start, one file": "`stepsaga start` path on a one-file home (outcome + checkpoint)",
        "start one file, engine FULL": "`stepsaga start` path on a one-file home, engine FULL",
    }
    for (who, mode, path), values in ratios.items():
        print(f"  {labels[who]} vs DBOS {mode}, {path}: {spread(values)}")
    print()
    total = sum(FLOOR_COMMITS.values())
    print(
        f"  the start path against its floor ({total} one-row commits per happy start, "
        f"no Python: {FLOOR_COMMITS}), ms per start, min / median / max:"
    )
    for (who, mode, path), c in sorted(cells.items(), key=lambda kv: kv[0][1]):
        if not who.endswith(" floor"):
            continue
        measured = cells[who.removesuffix(" floor"), mode, path]
        ms = [1000 / rate for rate in measured.rates]
        floor_ms = [1000 / rate for rate in c.rates]
        shares = [f / m for f, m in zip(floor_ms, ms, strict=True)]
        print(
            f"    {labels[who.removesuffix(' floor')]}, {mode}: {spread(ms, ' ms')}; floor "
            f"{spread(floor_ms, ' ms')}; floor / start {spread(shares)}"
        )
    print()


def _add(c: Cell, run: Callable[[int, bool], None], reject: bool, n: int) -> None:
    elapsed, counts = measure(lambda k: run(k, reject), n)
    c.add(elapsed, n, counts)


# --- Ledger.perform vs its floor ------------------------------------------------------------


def ledger_floor(tmp: Path, rounds: int, batch: int) -> None:
    """``Ledger.perform`` (claim: INSERT, complete: UPDATE) against a bare INSERT + UPDATE
    with 2 commits on the same file, same journal and ``synchronous``."""
    from stepsaga import EffectClass, ManualClock
    from stepsaga.ledger import Action, Intent, open_ledger

    now = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
    path = tmp / "ledger-floor.sqlite3"
    ledger = open_ledger(f"sqlite:///{path}", clock=ManualClock(now))
    bare = sqlite3.connect(path, isolation_level=None)
    modes = [bare.execute(f"PRAGMA {p}").fetchone()[0] for p in ("journal_mode", "synchronous")]
    bare.execute("PRAGMA journal_mode=WAL")
    bare.execute("PRAGMA synchronous=FULL")
    bare.execute("CREATE TABLE IF NOT EXISTS floor (k TEXT PRIMARY KEY, status TEXT, result TEXT)")
    seq = 0

    def perform(n: int) -> None:
        nonlocal seq
        for _ in range(n):
            seq += 1
            act = Action(
                tenant_id="acme",
                intent=Intent(f"CASE-{seq}", 1, now - timedelta(hours=1)),
                operation="refund_payment",
                effect=EffectClass.KEYED_WRITE,
                params={"payment_id": f"PAY-{seq}", "amount": "20.00", "currency": "USD"},
            )
            ledger.perform(act, lambda claim: {"refund_id": f"RF-{claim.attempt}"})

    def floor(n: int) -> None:
        nonlocal seq
        for _ in range(n):
            seq += 1
            key = f"acme:CASE-{seq}:r1:refund_payment"
            bare.execute("INSERT INTO floor VALUES (?, 'IN_PROGRESS', NULL)", (key,))
            bare.execute(
                "UPDATE floor SET status = 'COMPLETED', result = ? WHERE k = ?",
                ('{"refund_id":"RF-1"}', key),
            )

    perform(batch)
    floor(batch)
    ratios, costs = [], {}
    for _ in range(rounds):
        t_perform, costs["perform"] = measure(perform, batch)
        t_floor, costs["floor"] = measure(floor, batch)
        ratios.append(t_floor / t_perform)
    print("## Ledger.perform first call vs its floor (bare INSERT + UPDATE, 2 commits)")
    print(f"same file, WAL + FULL (the ledger opened it as {modes[0]}, synchronous {modes[1]})")
    for name, c in costs.items():
        fs = "n/a" if c.fsyncs is None else f"{c.fsyncs / batch:.1f}"
        print(f"  {name:8} {fs} fsyncs, {c.commits / batch:.1f} transactions per call")
    print(f"  perform rate / floor rate (goal >= 0.85): {spread(ratios)}\n")
    bare.close()
    ledger.close()


# --- storage per execution ------------------------------------------------------------------


def storage(tmp: Path, n: int) -> None:
    from dbos import DBOS  # noqa: F401 (imported by the peer table already)

    engine = EngineSide(tmp / "storage-engine", "NORMAL")
    engine.run(n, False)
    db = engine.happy.store._db
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    (pages,) = db.execute("PRAGMA page_count").fetchone()
    (page_size,) = db.execute("PRAGMA page_size").fetchone()
    (details,) = db.execute("SELECT SUM(LENGTH(details)) FROM history").fetchone()
    (events,) = db.execute("SELECT COUNT(*) FROM history").fetchone()
    engine.close()
    ours = pages * page_size / n
    dbos_path = tmp / "storage-dbos.sqlite3"
    side = DbosSide(_registered_workflow(), dbos_path, WAL_NORMAL)
    side.run(n, False)
    side.close()
    check = _real_connect(dbos_path)
    check.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    (dpages,) = check.execute("PRAGMA page_count").fetchone()
    (dsize,) = check.execute("PRAGMA page_size").fetchone()
    check.close()
    theirs = dpages * dsize / n
    print("## Store bytes per happy execution")
    print(
        f"  engine: {ours / 1024:.1f} KiB per execution ({events / n:.0f} events, "
        f"{details / n / 1024:.1f} KiB of stored event details), {n} executions, after a checkpoint"
    )
    print(f"  DBOS:   {theirs / 1024:.1f} KiB per workflow; ours / DBOS {ours / theirs:.1f}x")
    print(f"  goal <= 8 KiB: {'met' if ours <= 8 * 1024 else 'missed'}\n")


def wal_bytes(tmp: Path, template: Path, n: int = 10) -> None:
    """WAL bytes per happy start in a copy of the lived-in home: each file's ``-wal``
    growth over ``n`` starts (fewer than a checkpoint's 4 MB)."""
    root = tmp / "wal-home"
    shutil.copytree(template, root)
    side = StartSide(root, None, reject=False)
    side.run(1)

    def sizes(suffix: str) -> dict[str, int]:
        return {p.name.split(".")[0]: p.stat().st_size for p in root.glob(f"*.sqlite3{suffix}")}

    before = sizes("-wal")
    side.run(n)
    grown = {name: (size - before.get(name, 0)) / n for name, size in sizes("-wal").items()}
    side.close()
    print(f"## WAL bytes per happy start (`stepsaga start` path, {n} starts, lived-in home)")
    for name, size in sorted(grown.items()):
        print(f"  {name:12} {size / 1024:6.1f} KiB")
    ours = grown.get("executions", 0) + grown.get("ledger", 0)
    print(f"  engine + ledger: {ours / 1024:.1f} KiB (goal: <= 4x the store bytes above)\n")


_WORKFLOW: list[Any] = []


def _registered_workflow() -> Any:
    if not _WORKFLOW:
        _WORKFLOW.append(_dbos_setup())
    return _WORKFLOW[0]


# --- status at 50k vs 1k ------------------------------------------------------------------


@dataclass(frozen=True)
class Lived:
    """What a home that has lived holds besides the real case: execution rows, open
    reconciliation items of the case's tenant (one per compensated case) and ledger
    records of other cases (``stepsaga.testing._bulk``)."""

    executions: int
    open_items: int = 0
    records: int = 0

    def __str__(self) -> str:
        return (
            f"{self.executions:,} executions, {self.open_items:,} open items, "
            f"{self.records:,} ledger records"
        )


#: The home the start path and ``status`` are measured in (#26: the start path slowed as
#: open items piled up, which a fresh home per batch never showed).
LIVED = Lived(50_000, open_items=3_000, records=150_000)
LIVED_QUICK = Lived(10_000, open_items=1_000, records=30_000)


def _lived_home(root: Path, lived: Lived, *, one_file: bool = False) -> str:
    """``_home_with`` plus the open items and ledger history ``lived`` asks for."""
    from stepsaga import StateHome
    from stepsaga.ledger._sqlite import SqliteStore
    from stepsaga.testing._bulk import history, open_backlog

    case_id = _home_with(root, lived.executions, one_file=one_file)
    now = datetime.now(UTC) - timedelta(days=1)
    records, _ = history(lived.records, now=now)
    store = SqliteStore(StateHome(root, one_file=one_file).ledger_path)
    store.bulk_insert(records, open_backlog(lived.open_items, tenant=CASE["tenant_id"], now=now))
    store.close()
    for path in root.glob("*.sqlite3"):  # a copy starts with an empty WAL
        db = _real_connect(path)
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.close()
    return case_id


def _home_with(root: Path, total: int, *, one_file: bool = False) -> str:
    """A home with one real case (its ledger records too) and ``total - 1`` copies of its
    execution row under other case ids; returns the real case's id."""
    from stepsaga import StateHome
    from stepsaga.backends import LocalBackend
    from workflows.case import parse_case
    from workflows.project import reference_project

    case_id = "CASE-REAL"
    with LocalBackend(StateHome(root, one_file=one_file), reference_project()) as backend:
        backend.start(parse_case({**CASE, "case_id": case_id}), time_scale=0)
    db = _real_connect(root / "executions.sqlite3", isolation_level=None)
    db.execute("BEGIN")
    db.execute(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) "
        "INSERT INTO executions SELECT replace(e.arn, ?, 'CASE-C' || n.i), e.state_machine_arn, "
        "replace(e.name, ?, 'CASE-C' || n.i), e.digest, e.status, "
        "replace(e.input, ?, 'CASE-C' || n.i), e.output, e.error, e.cause, e.start_date - n.i, "
        "e.stop_date, e.redrive_count, e.redrive_date, e.test_case, e.mock_counts, "
        "e.cursor_state, e.cursor_input, e.cursor_entered, e.cursor_event, e.retry_counts, "
        "e.next_event_id, NULL, NULL, NULL, NULL, e.heartbeat, 0, NULL, NULL, e.variables "
        "FROM executions e, n",
        (total - 1, case_id, case_id, case_id),
    )
    db.execute("COMMIT")
    db.close()
    return case_id


def status_scale(tmp: Path, rounds: int, small: int, template: Path, lived_case: str) -> None:
    from stepsaga import StateHome
    from stepsaga.backends import LocalBackend
    from workflows.project import reference_project

    large_n = -1  # the lived-in home's key
    homes = {small: tmp / f"status-{small}", large_n: template}
    case_ids = {small: _home_with(homes[small], small), large_n: lived_case}
    times: dict[int, list[float]] = {small: [], large_n: []}
    for _ in range(rounds):
        for size, root in homes.items():
            started = time.perf_counter()
            with LocalBackend(StateHome(root), reference_project()) as backend:
                view = backend.status(case_ids[size])
            times[size].append(time.perf_counter() - started)
            assert view.status == "SUCCEEDED", view.status
    ratios = [b / a for a, b in zip(times[small], times[large_n], strict=True)]
    print(
        f"## `stepsaga status CASE_ID` (LocalBackend.status, fresh backend): "
        f"the home that has lived vs {small:,} executions"
    )
    print(
        f"  {small:,}: {spread([t * 1000 for t in times[small]], ' ms')}; "
        f"lived: {spread([t * 1000 for t in times[large_n]], ' ms')}"
    )
    print(f"  lived / {small:,} (goal <= 1.1x): {spread(ratios)}\n")


# --- CLI start-up -------------------------------------------------------------------------


def cli_startup(tmp: Path, rounds: int) -> None:
    home = tmp / "cli-home"
    case_id = _home_with(home, 1)
    ours = [sys.executable, "-m", "stepsaga", "status", case_id]
    env = {**os.environ, "STEPSAGA_HOME": str(home), "PYTHONPATH": str(ROOT)}
    env.pop("LD_PRELOAD", None)
    # Both sides run from bytecode, as installed CLIs do (the warm-up run writes it):
    # PYTHONDONTWRITEBYTECODE would recompile every stepsaga module on every run.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
    aws = real_executable("aws") or str(Path(sys.executable).with_name("aws"))
    has_aws = Path(aws).exists()
    times: dict[str, list[float]] = {"stepsaga": [], "aws": []}

    def timed(argv: list[str]) -> float:
        started = time.perf_counter()
        done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, check=False)
        elapsed = time.perf_counter() - started
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} failed: {done.stderr.decode()[-400:]}")
        return elapsed

    timed(ours)
    if has_aws:
        timed([aws, "--version"])
    for _ in range(rounds):
        times["stepsaga"].append(timed(ours))
        if has_aws:
            times["aws"].append(timed([aws, "--version"]))
    print(
        f"## CLI start-up: `python -m stepsaga status CASE_ID` (one execution) vs "
        f"`{aws} --version` (the real executable, past any version-manager shim)"
    )
    print(f"  stepsaga: {spread([t * 1000 for t in times['stepsaga']], ' ms')}")
    if not has_aws:
        print("  aws: not installed (pip install awscli), no ratio\n")
        return
    print(f"  aws:      {spread([t * 1000 for t in times['aws']], ' ms')}")
    ratios = [a / b for a, b in zip(times["stepsaga"], times["aws"], strict=True)]
    print(f"  stepsaga / aws (goal <= 1.0x): {spread(ratios)}\n")


#: Version managers whose shims start a shell and the manager before the real program
#: (50-60 ms for pyenv), and the command that names the program a shim runs.
_SHIMS = {b"pyenv": ["pyenv", "which"], b"asdf": ["asdf", "which"]}


def real_executable(name: str) -> str | None:
    """The program ``name`` runs, past a version manager's shim: the AWS CLI is timed as
    it starts when installed directly, not plus the shim's own start-up."""
    found = shutil.which(name)
    if found is None:
        return None
    path = Path(found).resolve()
    head = path.read_bytes()[:1024]
    for marker, which in _SHIMS.items():
        if head.startswith(b"#!") and marker in head and shutil.which(which[0]):
            done = subprocess.run([*which, name], capture_output=True, text=True, check=False)
            if done.returncode == 0 and done.stdout.strip():
                return str(Path(done.stdout.strip()).resolve())
    return str(path)


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    logging.disable(logging.INFO)
    try:
        yield
    finally:
        logging.disable(logging.NOTSET)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="smaller N (smoke run)")
    parser.add_argument("--rounds", type=int, default=None, help="interleaved rounds")
    parser.add_argument(
        "--only",
        choices=["peers", "ledger", "storage", "wal", "status", "cli"],
        action="append",
        help="run only these sections (repeatable; default: all)",
    )
    args = parser.parse_args()
    only = set(args.only or ["peers", "ledger", "storage", "wal", "status", "cli"])
    _preload_fsync_counter()
    rounds = args.rounds or (2 if args.quick else 3)
    n_dbos, n_engine, n_start = (30, 60, 20) if args.quick else (150, 300, 100)
    small, large = (1_000, LIVED_QUICK) if args.quick else (1_000, LIVED)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp_name, _quiet():
        tmp = Path(tmp_name)
        print(f"stepsaga vs DBOS, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {os.cpu_count()} CPUs")
        print(
            "guarantees per step: DBOS: at-least-once (checkpointed after it runs), no action "
            "ledger; stepsaga: the ledger's at-most-once per claim (result recorded, replays "
            "answered from it), AWS-shaped history\n"
        )
        template = tmp / "lived-template"
        if only & {"peers", "wal", "status"}:
            lived_case = _lived_home(template, large)
            print(f"a home that has lived: {large}\n")
        if "peers" in only:
            one_file = tmp / "lived-template-one-file"
            _lived_home(one_file, large, one_file=True)
            peer_table(tmp, rounds, n_dbos, n_engine, n_start, (template, one_file))
        if "ledger" in only:
            ledger_floor(tmp, max(rounds, 5), 40 if args.quick else 200)
        if "storage" in only:
            storage(tmp, 200 if args.quick else 1_000)
        if "wal" in only:
            wal_bytes(tmp, template)
        if "status" in only:
            status_scale(tmp, max(rounds, 7), small, template, lived_case)
        if "cli" in only:
            cli_startup(tmp, max(rounds, 7))
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"process peak RSS: {rss:.0f} MiB; whole run {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
