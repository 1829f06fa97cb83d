"""Embedded engine vs moto's Step Functions interpreter, measured side by side in one run.

Prints ratios, never asserts timings. The workload is the compiled replacement-order saga on
its happy path (ReserveStock → RefundPayment → CreateShipment, the last one ending it) with
trivial task handlers; the engine keeps its durable SQLite history on (WAL, one store).

    .venv/bin/python bench/engine.py            # full: 10k executions for the memory figure
    .venv/bin/python bench/engine.py --quick    # smaller N, for a smoke run
"""

from __future__ import annotations

import argparse
import io
import json
import random
import resource
import sys
import tempfile
import time
import tracemalloc
import zipfile
from pathlib import Path
from typing import Any
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from stepsaga import StateHome
from stepsaga.engine import LocalEngine
from stepsaga.engine._engine import substitute
from stepsaga.workflow import compile as compile_saga
from workflows.replacement_order import saga

FUNCTIONS = ["ReserveStock", "RefundPayment", "CreateShipment", "ReleaseReservation", "Reconcile"]
CASE = {
    "tenant_id": "acme",
    "case_id": "CASE-1001",
    "approval": {
        "approved_by": "ops@acme.example",
        "approved_at": "2026-11-29T09:30:00Z",
        "revision": 1,
    },
    "order_id": "ORD-77",
    "reserve": {"sku": "SKU-RED-MUG", "quantity": 1, "warehouse": "eu-west"},
    "refund": {"payment_id": "PAY-991", "amount": "20.00", "currency": "USD"},
    "shipment": {
        "address": {"name": "A. Buyer", "country": "DE"},
        "items": [{"sku": "SKU-RED-MUG", "quantity": 1}],
    },
}
RESULT = {"action_key": "k", "status": "COMPLETED", "result": {}, "replayed": False}


def definition() -> dict[str, Any]:
    names = {f"{f}FunctionArn": f"{f}Function" for f in FUNCTIONS}
    result = substitute(compile_saga(saga), names)
    assert isinstance(result, dict)
    return result


def trivial(event: Any, context: Any) -> Any:
    return RESULT


def transitions_per_execution(engine: LocalEngine, arn: str) -> int:
    events = engine.get_execution_history(arn)["events"]
    return sum(1 for e in events if e["type"].endswith("StateEntered"))


def run_engine(root: Path, n: int) -> tuple[float, int, LocalEngine, str]:
    engine = LocalEngine(
        StateHome(root),
        {f"{f}Function": trivial for f in FUNCTIONS},
        time_scale=0,
        rng=random.Random(1),
    )
    arn = engine.create_state_machine("replacement-order", definition())
    payload = json.dumps(CASE)
    started = time.perf_counter()
    last = ""
    for i in range(n):
        last = engine.start_execution(arn, f"case-{i}", payload)["executionArn"]
    return time.perf_counter() - started, n, engine, last


def run_moto(n: int) -> tuple[float, int]:
    from moto import mock_aws

    def invoke(
        self: Any,
        function_name: str,
        qualifier: Any,
        body: Any,
        headers: Any,
        response_headers: Any,
    ) -> bytes:
        return json.dumps(RESULT).encode()

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("index.py", "def handler(event, context):\n    return event\n")
    config: Any = {
        "stepfunctions": {"execute_state_machine": True},
        "lambda": {"use_docker": False},
    }
    with (
        mock_aws(config=config),
        mock.patch("moto.awslambda_simple.models.LambdaSimpleBackend.invoke", invoke),
    ):
        import boto3

        session = boto3.Session(
            aws_access_key_id="x", aws_secret_access_key="x", region_name="us-east-1"
        )
        iam: Any = session.client("iam")
        lam: Any = session.client("lambda")
        sfn: Any = session.client("stepfunctions")
        role = iam.create_role(RoleName="bench", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
        for f in FUNCTIONS:
            lam.create_function(
                FunctionName=f"{f}Function",
                Runtime="python3.12",
                Role=role,
                Handler="index.handler",
                Code={"ZipFile": buffer.getvalue()},
            )
        machine = sfn.create_state_machine(
            name="replacement-order", definition=json.dumps(definition()), roleArn=role
        )
        payload = json.dumps(CASE)
        started = time.perf_counter()
        for i in range(n):
            execution = sfn.start_execution(
                stateMachineArn=machine["stateMachineArn"], name=f"case-{i}", input=payload
            )
            while (
                sfn.describe_execution(executionArn=execution["executionArn"])["status"]
                == "RUNNING"
            ):
                time.sleep(0.001)
        return time.perf_counter() - started, n


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="smaller N (smoke run)")
    args = parser.parse_args()
    n_engine, n_moto, n_memory = (300, 10, 1_000) if args.quick else (2_000, 40, 10_000)

    with tempfile.TemporaryDirectory() as tmp:
        run_engine(Path(tmp) / "warm", 20)[2].close()  # imports, caches
        engine_s, n, engine, last = run_engine(Path(tmp) / "speed", n_engine)
        transitions = transitions_per_execution(engine, last)
        engine.close()
        moto_s, m = run_moto(n_moto)

        tracemalloc.start()
        memory_s, k, memory_engine, _ = run_engine(Path(tmp) / "memory", n_memory)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        store_bytes = sum(
            p.stat().st_size for p in (Path(tmp) / "memory").glob("executions.sqlite3*")
        )
        memory_engine.close()

    engine_rate, moto_rate = n / engine_s, m / moto_s
    per_transition_engine = engine_s / (n * transitions) * 1e6
    per_transition_moto = moto_s / (m * transitions) * 1e6
    mib = 2**20
    print(f"workload: compiled replacement-order saga, happy path, {transitions} states/execution")
    print(f"engine (durable SQLite history): {n} executions in {engine_s:.2f} s", end="")
    print(f" = {engine_rate:,.0f} executions/s")
    print(f"moto Step Functions interpreter: {m} executions in {moto_s:.2f} s", end="")
    print(f" = {moto_rate:,.1f} executions/s")
    print(f"ratio: engine is {engine_rate / moto_rate:,.0f}x moto's rate (goal >= 50x)")
    print(f"per state transition: engine {per_transition_engine:,.0f} us", end="")
    print(f", moto {per_transition_moto:,.0f} us")
    print(
        f"memory: {k:,} executions in one store: peak traced Python memory {peak / mib:.1f} MiB",
        end="",
    )
    print(f" ({memory_s:.1f} s under tracemalloc); store on disk {store_bytes / mib:.1f} MiB")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    print(f"process peak RSS (whole run, moto included): {rss:.0f} MiB")


if __name__ == "__main__":
    main()
