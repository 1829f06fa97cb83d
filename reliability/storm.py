"""Retry storm: every action delivered many times at once, as Lambda and Step Functions
retries, redrives and duplicate deliveries do — the effect must still happen once.

Each of ``actions`` forward-step events (reserve, refund and shipment in turn; shipping
has no idempotency key, so only the ledger stands between a repeat and a second shipment)
goes to ``deliveries`` workers at the same instant (a barrier per action). Workers are
threads, or processes of threads, each with handlers of its own (as separate Lambda
containers would be) over one shared ledger (SQLite file, or DynamoDB on moto) and the
simulated services. A worker told ``ActionInProgressError`` or a transient error retries
after a short pause, as the state machine's ``Retry`` would, until it gets the result.

Checked outside the code under test: the services' effects table holds exactly one effect
per action; every worker got the same result for an action; the tenant budget was debited
once per action.
"""

from __future__ import annotations

import json
import multiprocessing
import random
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from reliability.simulated import simulated_deps
from services import open_simulation
from stepsaga import StateHome, SystemClock
from stepsaga._handlers import build_handlers
from stepsaga._handlers.deps import HandlerDeps
from stepsaga._handlers.guard import Handler
from stepsaga.engine._lambda_invoke import LambdaContext
from stepsaga.errors import StepSagaError
from stepsaga.ledger import open_ledger
from workflows.case import parse_case
from workflows.replacement_order import saga

TENANT = "acme"
STEPS = (
    ("ReserveStock", "reserve_stock", "keyed_write", "reserve"),
    ("RefundPayment", "refund_payment", "keyed_write", "refund"),
    ("CreateShipment", "create_shipment", "physical", "shipment"),
)
TABLE = "stepsaga-storm"
BUDGET = 1_000_000
#: How long one delivery may keep retrying before it counts as stuck.
DELIVERY_DEADLINE_SECONDS = 120.0


@dataclass(frozen=True)
class StormConfig:
    actions: int = 100
    deliveries: int = 64
    """Concurrent deliveries of each action (workers)."""
    processes: int = 1
    """Workers are spread over this many processes (1: threads of this process)."""
    ledger: str = "sqlite"
    """``sqlite`` (a file) or ``dynamodb`` (moto, in this process: threads only)."""
    seed: int = 64


@dataclass
class StormReport:
    config: StormConfig
    deliveries: int = 0
    retries: Counter[str] = field(default_factory=Counter)
    """Deliveries answered with a retryable error and delivered again, by error."""
    effects: int = 0
    performed: int = 0
    """Deliveries the handlers say performed the effect (their claim, for comparison)."""
    debited: int = 0
    seconds: float = 0.0
    violations: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        c = self.config
        workers = (
            f"{c.processes} processes x {c.deliveries // c.processes} threads"
            if c.processes > 1
            else f"{c.deliveries} threads"
        )
        rate = self.deliveries / self.seconds if self.seconds else 0.0
        return [
            f"{c.ledger}, {workers}: {c.actions} actions x {c.deliveries} deliveries = "
            f"{self.deliveries} deliveries in {self.seconds:.1f} s ({rate:,.0f}/s)",
            f"  effects in the services' table: {self.effects} (want {c.actions}); "
            f"performed per handlers: {self.performed}; budget debited: {self.debited}",
            f"  retried deliveries: {sum(self.retries.values())} "
            f"({', '.join(f'{k} {v}' for k, v in sorted(self.retries.items())) or 'none'})",
            f"  violations: {len(self.violations)}",
        ]


def run_storm(config: StormConfig, root: Path) -> StormReport:
    """Run the storm in ``root`` (an empty folder) and check it."""
    if config.deliveries % config.processes:
        raise ValueError("deliveries must divide evenly over the processes")
    if config.ledger == "dynamodb" and config.processes > 1:
        raise ValueError("moto lives in one process: DynamoDB storms use threads")
    home = StateHome(root / "home").ensure()
    events = [_event(index) for index in range(config.actions)]
    started = time.monotonic()
    with _ledger_url(config, home) as url:
        with open_ledger(url) as ledger:
            ledger.set_budget(TENANT, BUDGET)
        if config.processes == 1:
            outcomes = _threads(config, home, url, events, None)
        else:
            outcomes = _processes(config, home, url, events, root)
        seconds = time.monotonic() - started
        with open_ledger(url) as ledger:
            remaining = ledger.budget(TENANT)
    report = StormReport(config, seconds=seconds)
    report.debited = BUDGET - (remaining or 0)
    _check(report, home, events, outcomes)
    return report


# --- events ------------------------------------------------------------------------------


def _event(index: int) -> dict[str, Any]:
    """A forward step's event exactly as the compiled state machine builds it."""
    step, operation, effect, params = STEPS[index % len(STEPS)]
    sku = f"SKU-{index:05d}"
    case = parse_case(
        {
            "tenant_id": TENANT,
            "case_id": f"STORM-{index:05d}",
            "approval": {
                "approved_by": "ops@example.com",
                "approved_at": SystemClock().now().strftime("%Y-%m-%dT%H:%M:%SZ"),
                "revision": 1,
            },
            "order_id": f"ORD-{index:05d}",
            "reserve": {"sku": sku, "quantity": 1, "warehouse": "eu-west"},
            "refund": {"payment_id": f"PAY-{index:05d}", "amount": "20.00", "currency": "USD"},
            "shipment": {
                "address": {
                    "name": "A. Buyer",
                    "line1": "1 Main St",
                    "city": "Berlin",
                    "postal_code": "10115",
                    "country": "DE",
                },
                "items": [{"sku": sku, "quantity": 1}],
            },
        }
    ).execution_input()
    return {
        "kind": "step",
        "saga": "replacement-order",
        "tenant_id": TENANT,
        "case_id": case["case_id"],
        "revision": 1,
        "approved_at": case["approval"]["approved_at"],
        "step": step,
        "operation": operation,
        "effect": effect,
        "params": case[params],
        "execution": {"name": f"acme-{case['case_id']}-r1", "state": step, "retry_count": 0},
    }


def _action_key(event: Mapping[str, Any]) -> str:
    return f"{TENANT}:{event['case_id']}:r1:{event['operation']}"


# --- workers -----------------------------------------------------------------------------

#: (action index, the result's JSON, replayed, retries by error name)
Delivery = tuple[int, str, bool, dict[str, int]]


class _Barrier:
    """What workers wait on before each action (threading or multiprocessing)."""

    def __init__(self, wait: Callable[[], object]) -> None:
        self.wait = wait


def _threads(
    config: StormConfig,
    home: StateHome,
    url: str,
    events: list[dict[str, Any]],
    barrier: _Barrier | None,
    threads: int | None = None,
) -> list[Delivery]:
    count = threads or config.deliveries
    if barrier is None:
        shared = threading.Barrier(count)
        barrier = _Barrier(shared.wait)
    handlers = [_handlers(home, url) for _ in range(count)]  # one "container" per worker
    outcomes: list[Delivery] = []
    lock = threading.Lock()

    def work(number: int) -> None:
        rng = random.Random(config.seed * 1000 + number)  # noqa: S311 (jitter)
        mine = [
            _deliver(handlers[number][0], events, index, rng, barrier)
            for index in range(len(events))
        ]
        with lock:
            outcomes.extend(mine)

    workers = [threading.Thread(target=work, args=(n,)) for n in range(count)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    for _, deps in handlers:
        deps.close()
    return outcomes


def _deliver(
    handler: Mapping[str, Handler],
    events: list[dict[str, Any]],
    index: int,
    rng: random.Random,
    barrier: _Barrier,
) -> Delivery:
    event = events[index]
    barrier.wait()  # every worker delivers this action at the same instant
    retries: Counter[str] = Counter()
    deadline = time.monotonic() + DELIVERY_DEADLINE_SECONDS
    while True:
        context = LambdaContext(
            function_name=str(event["step"]),
            aws_request_id=f"{index}-{rng.getrandbits(32):08x}",  # a new attempt, same key
            invoked_function_arn=f"arn:aws:lambda:us-east-1:123456789012:function:{event['step']}",
            remaining_millis=60_000,
        )
        try:
            result = handler[str(event["step"])](event, context)
        except StepSagaError as exc:
            if not exc.retryable or time.monotonic() > deadline:
                return (index, f"error {exc.error_name()}: {exc.message}", False, dict(retries))
            retries[exc.error_name()] += 1
            time.sleep(rng.uniform(0.001, 0.01))  # the state machine's Retry, compressed
            continue
        text = json.dumps(result["result"], sort_keys=True)
        return (index, text, bool(result["replayed"]), dict(retries))


def _handlers(home: StateHome, url: str) -> tuple[Mapping[str, Handler], HandlerDeps]:
    deps = simulated_deps(home, log_level="CRITICAL")
    if not url.startswith("sqlite:"):
        deps.ledger.close()
        deps = replace(deps, ledger=open_ledger(url))
    return build_handlers(deps, saga), deps


def _processes(
    config: StormConfig, home: StateHome, url: str, events: list[dict[str, Any]], root: Path
) -> list[Delivery]:
    context = multiprocessing.get_context("fork")
    shared = context.Barrier(config.deliveries)
    per_process = config.deliveries // config.processes
    files = [root / f"storm-{n}.jsonl" for n in range(config.processes)]

    def child(path: Path) -> None:
        found = _threads(config, home, url, events, _Barrier(shared.wait), per_process)
        path.write_text("\n".join(json.dumps(outcome) for outcome in found))

    processes = [context.Process(target=child, args=(path,)) for path in files]
    for process in processes:
        process.start()
    for process in processes:
        process.join()
    outcomes: list[Delivery] = []
    for process, path in zip(processes, files, strict=True):
        if process.exitcode != 0 or not path.exists():
            raise RuntimeError(f"a storm process ended with exit code {process.exitcode}")
        for line in path.read_text().splitlines():
            index, text, replayed, retries = json.loads(line)
            outcomes.append((index, text, replayed, retries))
    return outcomes


# --- checking ----------------------------------------------------------------------------


def _check(
    report: StormReport, home: StateHome, events: list[dict[str, Any]], outcomes: list[Delivery]
) -> None:
    config = report.config
    report.deliveries = len(outcomes)
    results: dict[int, set[str]] = defaultdict(set)
    for index, text, replayed, retries in outcomes:
        results[index].add(text)
        report.performed += not replayed
        report.retries.update(retries)
    effects = Counter(effect.action_key for effect in open_simulation(home).effects())
    report.effects = sum(effects.values())
    want = config.actions * config.deliveries
    if report.deliveries != want:
        report.violations.append(f"{report.deliveries} deliveries answered, want {want}")
    for index, event in enumerate(events):
        key = _action_key(event)
        if effects[key] != 1:
            report.violations.append(f"{key}: {effects[key]} effects in the services' table")
        if len(results[index]) != 1:
            report.violations.append(f"{key}: callers got {len(results[index])} different results")
        if any(text.startswith("error ") for text in results[index]):
            report.violations.append(f"{key}: a caller got an error: {min(results[index])}")
    if report.debited != config.actions:
        report.violations.append(f"budget debited {report.debited}, want {config.actions}")


# --- ledgers -----------------------------------------------------------------------------


@contextmanager
def _ledger_url(config: StormConfig, home: StateHome) -> Iterator[str]:
    if config.ledger == "sqlite":
        yield home.ledger_url
        return
    if config.ledger != "dynamodb":
        raise ValueError(f"unknown ledger {config.ledger!r}")
    with serialized_moto():
        import boto3

        from stepsaga.ledger._dynamodb import create_table

        create_table(boto3.client("dynamodb", region_name="us-east-1"), TABLE)
        yield f"dynamodb://{TABLE}?region=us-east-1"


@contextmanager
def serialized_moto() -> Iterator[None]:
    """moto in this process, one request at a time: moto does not lock its tables, while
    DynamoDB applies each conditional write atomically (threads still interleave freely
    between requests)."""
    from moto import mock_aws
    from moto.core.botocore_stubber import BotocoreStubber

    lock = threading.Lock()
    original = BotocoreStubber.__call__

    def locked(self: Any, *args: Any, **kwargs: Any) -> Any:
        with lock:
            return original(self, *args, **kwargs)

    BotocoreStubber.__call__ = locked  # type: ignore[method-assign]
    try:
        with mock_aws():
            yield
    finally:
        BotocoreStubber.__call__ = original  # type: ignore[method-assign]


__all__ = ["StormConfig", "StormReport", "run_storm", "serialized_moto"]
