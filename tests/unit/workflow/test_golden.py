"""The reviewed golden file of the replacement-order ASL.

A change to the compiler or the saga shows up here as a diff to review. To accept it:
``STEPSAGA_UPDATE_GOLDEN=1 .venv/bin/pytest tests/unit/workflow/test_golden.py`` and commit
the golden file with the change.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

GOLDEN = Path(__file__).parent / "golden" / "replacement_order.asl.json"


def test_replacement_order_matches_the_golden_file(definition: dict[str, Any]) -> None:
    text = json.dumps(definition, indent=2) + "\n"
    if os.environ.get("STEPSAGA_UPDATE_GOLDEN") == "1":
        GOLDEN.write_text(text, encoding="utf-8")
    assert GOLDEN.exists(), f"{GOLDEN} missing: run with STEPSAGA_UPDATE_GOLDEN=1"
    assert json.loads(GOLDEN.read_text(encoding="utf-8")) == definition
    assert GOLDEN.read_text(encoding="utf-8") == text, "same content, different formatting"
