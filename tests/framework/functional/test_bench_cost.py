"""``bench/cost.py`` runs the demo's paths with the ledger on DynamoDB (moto) and counts."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from stepsaga.testing._cost import Prices

ROOT = Path(__file__).resolve().parents[3]


def test_every_demo_path_is_counted_from_its_run() -> None:
    spec = importlib.util.spec_from_file_location("bench_cost", ROOT / "bench" / "cost.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_cost"] = module
    spec.loader.exec_module(module)
    costs = {cost.path.split(":")[0]: cost for cost in module.measure(Prices())}
    clean = costs["a clean case"]
    assert clean.history.invocations == 3  # reserve, refund, ship
    assert clean.history.by_state.get("RefundPayment") == 1
    assert clean.write_units > 0  # the ledger ran on DynamoDB
    assert clean.read_units > 0
    resolved = next(c for p, c in costs.items() if "a person resolves it applied" in c.path)
    assert resolved.publishes >= 1
    assert resolved.per_thousand()["total"] > clean.per_thousand()["total"]
