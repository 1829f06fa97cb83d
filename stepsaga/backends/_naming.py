"""One execution per approved case: its name derives from tenant + case + revision.

``acme`` / ``CASE-1001`` / revision 1 → ``acme-CASE-1001-r1``. AWS allows 1 to 80 characters
of ``[A-Za-z0-9_-]``. Because tenant ids may contain ``-`` too, ``a-b`` + ``c`` and ``a`` +
``b-c`` would read alike; such names (a tenant with ``-``), and names that would be too
long, end in a hash of the exact (tenant, case, revision) instead. A plain name ends in
``-r<digits>`` and a hashed one in ``-<12 hex digits>``, so the two forms never meet.
"""

from __future__ import annotations

import hashlib
import json
import re

MAX_NAME = 80
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_HASH_DIGITS = 12


def execution_name(tenant_id: str, case_id: str, revision: int) -> str:
    """The execution name of this approved case (same on both backends)."""
    plain = f"{tenant_id}-{case_id}-r{revision}"
    if "-" not in tenant_id and len(plain) <= MAX_NAME and not _UNSAFE.search(plain):
        return plain
    identity = json.dumps([tenant_id, case_id, revision], separators=(",", ":"))
    digest = hashlib.sha256(identity.encode()).hexdigest()[:_HASH_DIGITS]
    readable = _UNSAFE.sub("_", plain)[: MAX_NAME - _HASH_DIGITS - 1]
    return f"{readable}-{digest}"


def execution_arn(state_machine_arn: str, name: str) -> str:
    """The ARN of the execution ``name`` of the (unqualified) state machine: AWS names an
    execution ``…:execution:<machine>:<name>``, whichever version or alias it started on."""
    prefix, _, machine = state_machine_arn.rpartition(":stateMachine:")
    return f"{prefix}:execution:{machine}:{name}"


_PLAIN = re.compile(r"^(?P<tenant>[A-Za-z0-9_]+)-(?P<case>[A-Za-z0-9_-]+)-r(?P<revision>\d{1,9})$")


def case_of_name(name: str) -> tuple[str, str, int] | None:
    """``(tenant, case, revision)`` of a plain name (what :func:`execution_name` made it
    from), so a listing need not read the execution's input; ``None`` for a hashed name
    (or anything :func:`execution_name` would not have written)."""
    match = _PLAIN.match(name)
    if match is None:
        return None
    tenant, case, revision = match["tenant"], match["case"], int(match["revision"])
    return (tenant, case, revision) if execution_name(tenant, case, revision) == name else None


def tenant_prefix(tenant_id: str) -> str:
    """What every execution name of ``tenant_id`` starts with (plain or hashed)."""
    return (_UNSAFE.sub("_", tenant_id) + "-")[: MAX_NAME - _HASH_DIGITS - 1]
