"""A case may not carry a top-level field the compiled machine keeps next to it
(``stepsaga.workflow._names.StateField``): ``stepsaga start`` refuses it in one line naming
the field, exit 2, and starts nothing. The saga here declares no input model, so any other
extra field would pass (``OpenCase``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from stepsaga._project.home import StateHome
from stepsaga.workflow._names import RESERVED_CASE_FIELDS
from tests.framework.functional.cli_support import cli

USER_SAGA = Path(__file__).parents[3] / "examples" / "user_saga" / "my_sagas.py"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "open-project"
    root.mkdir()
    shutil.copy(USER_SAGA, root / "reserved_fields_sagas.py")
    (root / "pyproject.toml").write_text(
        '[project]\nname = "open-project"\nversion = "0"\n\n'
        '[tool.stepsaga.sagas]\nreturns = "reserved_fields_sagas:returns"\n',
        encoding="utf-8",
    )
    return root


def case(tmp_path: Path, **extra: object) -> Path:
    data = {
        "tenant_id": "acme",
        "case_id": "RET-1",
        "approval": {
            "approved_by": "ops@acme.example",
            "approved_at": "2026-11-29T09:30:00Z",
            "revision": 1,
        },
        "label": {"carrier": "dhl"},
        "refund": {"amount": "5.00", "currency": "EUR"},
        **extra,
    }
    path = tmp_path / "case.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.mark.parametrize("field", sorted(RESERVED_CASE_FIELDS))
def test_a_reserved_top_level_field_is_refused_and_nothing_starts(
    tmp_path: Path, project: Path, field: str
) -> None:
    home = StateHome(tmp_path / "home")
    result = cli(home, "--project", str(project), "start", str(case(tmp_path, **{field: {}})))
    assert result.code == 2, result.out + result.err
    lines = [line for line in result.err.splitlines() if line.strip()]
    assert len(lines) == 1, result.err
    assert f"'{field}'" in lines[0]
    assert "reserved" in lines[0]
    assert not home.root.exists()  # nothing written: no ledger, no execution
    listed = cli(home, "--project", str(project), "list", "--json")
    assert listed.code == 0, listed.err
    assert json.loads(listed.out)["executions"] == []
