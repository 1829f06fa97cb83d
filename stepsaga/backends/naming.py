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
