"""Which execution a ``ref`` means, once a backend has found what it could mean: the one
rule both backends apply (``base.py``: a ref is an execution ARN, name or case id).

A name and a case id can look the same: tenant ``evil`` may use the case id
``acme-CASE-1-r1``, which is also the name of ``acme``'s execution. The rule never lets one
silently win: when the ref names an execution *and* is another execution's case id
(within ``--tenant``, if given), it refuses in one line listing the candidates, so the
operator passes the ARN or ``--tenant``. A case id alone resolves to its newest revision;
one used by several tenants needs ``--tenant``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from stepsaga.backends._assemble import CaseIdentity
from stepsaga.errors import InvalidInputError, NotFoundError


@dataclass(frozen=True)
class Candidate:
    """An execution a ref may mean, and whose case it runs."""

    arn: str
    name: str
    identity: CaseIdentity


def choose(
    ref: str,
    tenant: str | None,
    *,
    named: Sequence[Candidate],
    of_case: Sequence[Candidate],
    where: str,
) -> Candidate:
    """``named``: the executions called ``ref`` (one per state machine that has one);
    ``of_case``: executions whose case id may be ``ref`` (each checked here). ``where``
    ends the not-found line."""
    names = [c for c in named if tenant in (None, c.identity.tenant_id)]
    arns = {c.arn for c in names}
    cases = [
        c
        for c in of_case
        if c.identity.case_id == ref
        and tenant in (None, c.identity.tenant_id)
        and c.arn not in arns
    ]
    if not cases and len(names) == 1:
        return names[0]
    if not cases and not names:
        whose = f" of tenant {tenant}" if tenant else ""
        raise NotFoundError(f"no execution or case {ref!r}{whose} {where}", ref=ref)
    newest = {c.identity.tenant_id: c for c in sorted(cases, key=lambda c: c.identity.revision)}
    if names:
        listed = [f"execution {c.arn} (tenant {c.identity.tenant_id})" for c in names] + [
            f"case {ref} of tenant {t} (execution {c.name})" for t, c in sorted(newest.items())
        ]
        raise InvalidInputError(
            f"{ref!r} is ambiguous: {'; '.join(listed)}; pass the execution ARN"
            + (" or --tenant" if tenant is None and len(names) == 1 else ""),
            field="ref",
            candidates=[*arns, *(c.arn for _, c in sorted(newest.items()))],
        )
    if len(newest) > 1:
        raise InvalidInputError(
            f"case {ref} exists for tenants {', '.join(sorted(newest))}: pass --tenant",
            field="tenant",
        )
    return next(iter(newest.values()))
