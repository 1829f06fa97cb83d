"""The ledger's tenant budgets (part of :class:`~stepsaga.ledger.Ledger`)."""

from __future__ import annotations

from stepsaga.errors import InvalidInputError
from stepsaga.ledger._listing import LedgerListing
from stepsaga.ledger._models import check_tenant


class LedgerBudgets(LedgerListing):
    """Tenant budgets that claims with a cost debit."""

    # --- budgets -------------------------------------------------------------------------

    def set_budget(self, tenant_id: str, amount: int) -> None:
        """Set the tenant's remaining budget (claims with a cost debit it)."""
        check_tenant(tenant_id)
        if isinstance(amount, bool) or not isinstance(amount, int) or amount < 0:
            raise InvalidInputError("budget amount must be a non-negative integer", field="amount")
        self._store.set_budget(tenant_id, amount)

    def budget(self, tenant_id: str) -> int | None:
        """The tenant's remaining budget, or None when it has none (costs are not debited)."""
        return self._store.get_budget(tenant_id)
