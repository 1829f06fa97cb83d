"""Every deployed entry point lives in ``stepsaga.lambdas``; the handler paths of before
still work for one release, warn, and run the same function.

(The old paths below are deprecated-shim paths: the #29 module rewrite leaves them alone.)
"""

from __future__ import annotations

import importlib
import sys

import pytest

import stepsaga.lambdas
from stepsaga._aws.audit_copy import AUDIT_COPY_HANDLER
from stepsaga._aws.resolver import RESOLVER_HANDLER
from stepsaga._project.deployment import LAMBDA_HANDLER
from stepsaga.cdk._auto_redrive import AUTO_REDRIVE_HANDLER
from stepsaga.cdk._ingress import INGRESS_HANDLER
from stepsaga.cdk._stack import OVERDUE_CHECK_HANDLER

DEPLOYED = [
    LAMBDA_HANDLER,
    INGRESS_HANDLER,
    AUTO_REDRIVE_HANDLER,
    OVERDUE_CHECK_HANDLER,
    AUDIT_COPY_HANDLER,
    RESOLVER_HANDLER,
]

OLD_PATHS = {
    "stepsaga.lambda_handler": "step",
    "stepsaga.ingress": "ingress",
    "stepsaga.auto_redrive": "auto_redrive",
    "stepsaga.audit_copy": "audit_copy",
    "stepsaga.resolver": "resolver",
    "stepsaga.reconciliation.overdue": "overdue_check",
}


def resolve(handler: str) -> object:
    """What Lambda's Python runtime does with a function's ``Handler``."""
    module, _, name = handler.rpartition(".")
    return getattr(importlib.import_module(module), name)


def test_every_deployed_handler_is_an_entry_point_of_stepsaga_lambdas() -> None:
    assert {h.rpartition(".")[0] for h in DEPLOYED} == {"stepsaga.lambdas"}
    assert sorted(h.rpartition(".")[2] for h in DEPLOYED) == sorted(stepsaga.lambdas.__all__)
    for handler in DEPLOYED:
        assert callable(resolve(handler))


def test_an_unknown_entry_point_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        resolve("stepsaga.lambdas.nope")


@pytest.mark.parametrize(("old", "new"), sorted(OLD_PATHS.items()))
def test_the_old_handler_path_warns_and_runs_the_same_function(old: str, new: str) -> None:
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=f"use stepsaga.lambdas.{new}"):
        shim = importlib.import_module(old)
    assert shim.handler is resolve(f"stepsaga.lambdas.{new}")
