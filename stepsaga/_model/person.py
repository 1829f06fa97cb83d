"""A person's identity as an input names it: who approved a case, who decided an item.

One rule for ``approval.approved_by`` and ``recon resolve --by`` (it is written into the
ledger, the execution input and every resolution note): 3 to 254 characters once surrounding
whitespace is stripped, none of them a control or format character. A newline in it would
forge a second line in logs and tables; a one-letter name identifies nobody.
"""

from __future__ import annotations

import unicodedata
from typing import Annotated

from pydantic import AfterValidator, StringConstraints, TypeAdapter, ValidationError

from stepsaga._model.inputs import describe_validation_error
from stepsaga.errors import InvalidInputError

MIN_LENGTH = 3
MAX_LENGTH = 254  # the longest e-mail address

#: Unicode categories refused anywhere in an identity: controls (newline, tab, NUL), format
#: characters (bidi overrides, zero-width), surrogates (no UTF-8 for them), private-use and
#: unassigned code points, line and paragraph separators.
REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


def _printable(value: str) -> str:
    bad = next((c for c in value if unicodedata.category(c) in REFUSED_CATEGORIES), None)
    if bad is not None:
        raise ValueError(
            f"must not contain control or unassigned characters (found U+{ord(bad):04X})"
        )
    return value


#: Who approved or decided: 3 to 254 printable characters, surrounding whitespace stripped.
PersonId = Annotated[
    str,
    StringConstraints(strip_whitespace=True, min_length=MIN_LENGTH, max_length=MAX_LENGTH),
    AfterValidator(_printable),
]

_ADAPTER: TypeAdapter[str] = TypeAdapter(PersonId)


def check_person(value: object, field: str) -> str:
    """``value`` as a :data:`PersonId` (stripped), or one ``InvalidInputError`` line that
    names ``field`` (e.g. ``--by``)."""
    try:
        return _ADAPTER.validate_python(value, strict=True)
    except ValidationError as exc:
        _, line = describe_validation_error(exc, field)
        raise InvalidInputError(line, field=field) from None


#: The longest note an operator's decision or stop keeps (it is stored and shown whole).
MAX_NOTE = 1000


def check_note(value: object, field: str = "--note") -> str:
    """An operator's note — ``stop --note``, ``recon resolve --note``, the console's and the
    server-side resolver's — the one rule for all of them: 1 to 1000 printable characters,
    stripped. A note is stored, shown whole and written into audit lines: a newline would
    forge a second line, an escape or bidi override would rewrite what a terminal shows."""
    text = value.strip() if isinstance(value, str) else ""
    if not text:
        raise InvalidInputError(f"{field}: must not be empty", field=field)
    if len(text) > MAX_NOTE:
        raise InvalidInputError(f"{field}: at most {MAX_NOTE} characters", field=field)
    try:
        _printable(text)
    except ValueError as exc:
        raise InvalidInputError(f"{field}: {exc}", field=field) from None
    return text
