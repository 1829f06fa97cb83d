"""The reviewed golden files of the replacement-order ASL, in JSONPath and in JSONata.

A change to the compiler or the saga shows up here as a diff to review. To accept it:
``STEPSAGA_UPDATE_GOLDEN=1 .venv/bin/pytest tests/framework/unit/workflow/test_golden.py``
and commit the golden file with the change.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

from stepsaga.workflow import compile
from workflows.multi_warehouse import saga as multi_warehouse
from workflows.replacement_order import saga

GOLDEN = Path(__file__).parent / "golden" / "replacement_order.asl.json"
GOLDEN_JSONATA = Path(__file__).parent / "golden" / "replacement_order.jsonata.asl.json"
GOLDEN_MULTI_WAREHOUSE_JSONATA = (
    Path(__file__).parent / "golden" / "multi_warehouse.jsonata.asl.json"
)


def matches_golden(golden: Path, definition: dict[str, Any]) -> None:
    text = json.dumps(definition, indent=2) + "\n"
    if os.environ.get("STEPSAGA_UPDATE_GOLDEN") == "1":
        golden.write_text(text, encoding="utf-8")
    assert golden.exists(), f"{golden} missing: run with STEPSAGA_UPDATE_GOLDEN=1"
    assert json.loads(golden.read_text(encoding="utf-8")) == definition
    assert golden.read_text(encoding="utf-8") == text, "same content, different formatting"


def test_replacement_order_matches_the_golden_file(definition: dict[str, Any]) -> None:
    matches_golden(GOLDEN, definition)


def test_replacement_order_in_jsonata_matches_its_golden_file() -> None:
    matches_golden(GOLDEN_JSONATA, compile(dataclasses.replace(saga, query_language="JSONata")))


def test_multi_warehouse_in_jsonata_matches_its_golden_file() -> None:
    jsonata = dataclasses.replace(multi_warehouse, query_language="JSONata")
    matches_golden(GOLDEN_MULTI_WAREHOUSE_JSONATA, compile(jsonata))
