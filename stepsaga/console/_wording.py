"""Backend messages in a web page's words.

The backend words its refusals for the CLI (``--since: must carry a timezone``, ``pass
--tenant``); the console shows the same refusal naming the field on the page. One table:
a CLI flag and the form field it is on the page.
"""

from __future__ import annotations

import re

#: CLI phrase -> the page's words (the longest phrases first, so they win).
_PHRASES: tuple[tuple[str, str], ...] = (
    ("pass --tenant", "choose the tenant"),
    ("or --tenant", "or a tenant"),
    ("--by WHO --note TEXT", "with a note"),
)
#: A flag left over: the field of that name (``--since`` -> ``Started since``).
_FIELDS: dict[str, str] = {
    "since": "Started since",
    "tenant": "Tenant",
    "status": "Status",
    "outcome": "Outcome",
    "saga": "Saga",
    "note": "Note",
    "by": "Decided by",
    "limit": "Page size",
}
_FLAG = re.compile(r"--([a-z][a-z-]*)")


def web_wording(message: str) -> str:
    """``message`` with its CLI flags named as the page's fields."""
    for phrase, words in _PHRASES:
        message = message.replace(phrase, words)
    return _FLAG.sub(lambda m: _FIELDS.get(m.group(1), m.group(1).replace("-", " ")), message)
