"""What 1,000 replacement-order cases cost on AWS, per path, counted from real runs.

Each path of ``stepsaga demo`` runs on the embedded engine with the real handlers and the
ledger on DynamoDB (moto, in-process): the compiled definition and the recorded history
give the billed state transitions and Lambda invocations, the ledger's DynamoDB calls give
the request units (``stepsaga.testing._cost`` says how each is counted, and which prices).

    .venv/bin/python bench/cost.py            # table
    .venv/bin/python bench/cost.py --json     # one JSON object per path
    .venv/bin/python bench/cost.py --lambda-ms 250 --memory-mb 1024
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import boto3
from moto import mock_aws

from services import load_faults
from stepsaga import Project, StateHome, SystemClock
from stepsaga.backends import LocalBackend, ReconFilter, ReconOutcome
from stepsaga.ledger._dynamodb import create_table
from stepsaga.testing._cost import CaseCost, DynamoDBMeter, Prices, count_history
from workflows.case import load_case
from workflows.demo import NOTE, OPERATOR, SCENARIOS, approved_now, examples_dir

REGION = "us-east-1"
TABLE = "stepsaga-cost-ledger"


def measure(prices: Prices) -> list[CaseCost]:
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    project = Project.find(Path(__file__).resolve().parents[1])
    folder = examples_dir(project)
    clock = SystemClock()
    costs = []
    with mock_aws(), tempfile.TemporaryDirectory() as tmp:
        reader = boto3.session.Session().client("dynamodb", region_name=REGION)
        create_table(reader, TABLE)
        meter = DynamoDBMeter(reader)
        boto3.setup_default_session()  # the ledger's client comes from it: metered
        assert boto3.DEFAULT_SESSION is not None
        meter.attach(boto3.DEFAULT_SESSION.events)
        url = f"dynamodb://{TABLE}?region={REGION}"
        with LocalBackend(StateHome(Path(tmp)), project, clock=clock, ledger_url=url) as backend:
            for scenario in SCENARIOS:
                case = approved_now(load_case(folder / scenario.case_file), clock)
                faults = (
                    load_faults(folder / scenario.faults_file) if scenario.faults_file else None
                )
                meter.reset()
                view = backend.start(case, faults=faults, time_scale=0)
                with meter.paused():
                    items = backend.recon_list(
                        status=ReconFilter.ALL, tenant=case.tenant_id, case=case.case_id
                    )
                path = scenario.title
                for item in items:
                    if item.waiting:
                        backend.recon_resolve(
                            item.id, ReconOutcome.APPLIED, OPERATOR, NOTE, time_scale=0
                        )
                        path += " → a person resolves it applied"
                with meter.paused():
                    history = backend.history(view.execution_arn)
                costs.append(
                    CaseCost(
                        path=path,
                        history=count_history(history["events"]),
                        write_units=meter.write_units,
                        read_units=meter.read_units,
                        publishes=len(items),
                        prices=prices,
                    )
                )
    return costs


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--json", action="store_true", help="one JSON object per path")
    parser.add_argument("--lambda-ms", type=int, default=Prices.lambda_billed_ms)
    parser.add_argument("--memory-mb", type=int, default=Prices.lambda_memory_mb)
    args = parser.parse_args()
    prices = Prices(lambda_billed_ms=args.lambda_ms, lambda_memory_mb=args.memory_mb)
    costs = measure(prices)
    if args.json:
        for cost in costs:
            print(json.dumps(cost.to_json()))
        return
    print(
        f"USD per 1,000 cases (us-east-1 list prices; Lambda {prices.lambda_memory_mb} MB arm64, "
        f"{prices.lambda_billed_ms} ms billed per invocation, assumed)"
    )
    columns = ("trans", "λ", "WRU", "RRU", "SFN $", "λ $", "DDB $", "total")
    widths = (5, 3, 4, 5, 7, 7, 7, 7)
    print(f"{'path':72} " + " ".join(f"{c:>{w}}" for c, w in zip(columns, widths, strict=True)))
    for cost in costs:
        p = cost.per_thousand()
        print(
            f"{cost.path[:72]:72} {cost.history.transitions:>5} {cost.history.invocations:>3} "
            f"{cost.write_units:>4} {cost.read_units:>5.1f} {_usd(p['step_functions'])} "
            f"{_usd(p['lambda'])} {_usd(p['dynamodb'])} {_usd(p['total'])}"
        )
    print("\nbilled transitions per state:")
    for cost in costs:
        states = ", ".join(f"{name} {n}" for name, n in cost.history.by_state.items())
        print(f"  {cost.path[:60]}: {states}")


def _usd(value: Decimal) -> str:
    return f"{value:>7.4f}"


if __name__ == "__main__":
    main()
