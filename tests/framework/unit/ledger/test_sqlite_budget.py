"""SQLite: a costed claim of a tenant without a budget takes no write lock it then rolls back."""

from __future__ import annotations

from pathlib import Path

from stepsaga.ledger import Ledger
from stepsaga.ledger._sqlite import SqliteStore
from tests.framework.conformance.ledger.helpers import make_action


def test_a_tenant_without_a_budget_claims_in_one_transaction(tmp_path: Path) -> None:
    statements: list[str] = []
    ledger = Ledger(SqliteStore(tmp_path / "ledger.db", trace=statements.append))
    statements.clear()
    claim = ledger.claim(make_action(cost=5))
    assert claim.record.debited == 0
    writes = [
        s.split()[0].upper() for s in statements if not s.lstrip().upper().startswith("SELECT")
    ]
    # The record and the case's latest revision (stepsaga.ledger._latest); no budget, and no
    # BEGIN IMMEDIATE … ROLLBACK before it.
    assert writes == ["BEGIN", "INSERT", "INSERT", "COMMIT"]


def test_a_budgeted_tenant_is_debited_in_the_claims_transaction(tmp_path: Path) -> None:
    statements: list[str] = []
    ledger = Ledger(SqliteStore(tmp_path / "ledger.db", trace=statements.append))
    ledger.set_budget("acme", 9)
    statements.clear()
    ledger.claim(make_action(cost=5))
    assert ledger.budget("acme") == 4
    assert "ROLLBACK" not in statements
