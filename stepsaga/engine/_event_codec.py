"""History details stored small: each event's JSON deflated against the one before it.

An execution's events repeat each other: a state's input is the previous state's output,
a task's parameters and result sit inside both, and the case document travels through all
of them (escaped as JSON strings, as AWS's history has it). Deflating each event with the
previous event's text as the preset dictionary (``zlib``'s ``zdict``) stores mostly what
changed: about a fifth of the plain JSON for a three-step saga.

Rows hold ``bytes`` when encoded this way and ``str`` when written plain (stores written
before this codec existed); both decode, so no migration is needed. Decoding is in event
order, each event's text being the next one's dictionary.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator

__all__ = ["decode", "encode"]

#: Part of the stored format (a decoder must cut the dictionary the same way): a 16 KiB
#: window, so the dictionary is the previous event's last 16 KiB. A smaller window and
#: ``memLevel`` make a compressor ~15x cheaper to set up than zlib's default (~10 µs instead
#: of ~150 µs per event) for the same size on events of a few KiB.
_WBITS = -14
_WINDOW = 1 << -_WBITS
_MEM_LEVEL = 6
_LEVEL = 1


def _dictionary(previous: bytes) -> bytes:
    return previous[-_WINDOW:]


def encode(text: str, previous: bytes) -> tuple[bytes, bytes]:
    """``text`` deflated against ``previous`` (the prior event's plain bytes), and the plain
    bytes for the next event."""
    plain = text.encode()
    if previous:
        packer = zlib.compressobj(
            _LEVEL, zlib.DEFLATED, _WBITS, _MEM_LEVEL, zdict=_dictionary(previous)
        )
    else:
        packer = zlib.compressobj(_LEVEL, zlib.DEFLATED, _WBITS, _MEM_LEVEL)
    return packer.compress(plain) + packer.flush(), plain


def decode(values: Iterable[str | bytes | None]) -> Iterator[str | None]:
    """The plain texts of one execution's stored details, given in event order."""
    previous = b""
    for value in values:
        if value is None:
            yield None
            continue
        if isinstance(value, str):
            plain = value.encode()
        elif previous:
            unpacker = zlib.decompressobj(_WBITS, zdict=_dictionary(previous))
            plain = unpacker.decompress(value) + unpacker.flush()
        else:
            plain = zlib.decompress(value, _WBITS)
        previous = plain
        yield plain.decode()
