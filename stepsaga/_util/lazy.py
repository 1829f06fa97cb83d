"""Package namespaces that import a name's module on first use (PEP 562).

The CLI's start-up pays only for what a command touches: ``import stepsaga`` or
``stepsaga.ledger`` loads nothing until a name is read. One helper for every package."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_getattr(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: ``where[name]`` is the module defining
    ``name`` (or ``module:attribute`` when it is defined under another name); the value is
    imported on first use and kept in the package's namespace."""

    def attribute(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, defined_as = where[name].partition(":")
        value = getattr(import_module(module), defined_as or name)
        setattr(sys.modules[package], name, value)
        return value

    return attribute
