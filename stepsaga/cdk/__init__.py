"""stepsaga's CDK constructs: deploy any declared saga from your own CDK app.

Needs the ``cdk`` extra (``pip install 'stepsaga[cdk]'``; ``infra`` is the same extra under
its former name). A team's ``infra/app.py``::

    from pathlib import Path

    from aws_cdk import App
    from stepsaga import Project
    from stepsaga.cdk import FunctionSettings, SagaStack, StageSettings

    app = App()
    SagaStack(
        app,
        project=Project.load(Path(__file__).resolve().parent.parent),
        saga="subscription-upgrade",
        settings=StageSettings.for_stage(app.node.try_get_context("stage") or "dev"),
        # Every function: the app's own configuration (its Dependencies.aws reads it).
        defaults=FunctionSettings(environment={"BILLING_URL": "https://billing.example"}),
        # One function: its secrets and grants on the app's own resources.
        functions={"ChargeCard": FunctionSettings(grant=lambda fn: queue.grant_send_messages(fn))},
    )
    app.synth()

What the construct owns (never the app): the ledger table, the encrypted topic, one
function per saga function (``stepsaga.lambdas.step`` with ``STEPSAGA_SAGA``,
``STEPSAGA_FUNCTION``, ``STEPSAGA_DEPENDENCIES``), the Standard state machine compiled from
the saga, the alarms, the scheduled overdue-reconciliation check, the stack outputs, and each
function's access to those (``stepsaga.cdk._access``, derived from the saga). The Lambda asset
is the project's code plus stepsaga plus its pinned dependencies, built without Docker
(``stepsaga.cdk._bundling``); a module a function would load but the asset lacks fails the
synth with one line (``stepsaga.errors.DeploymentError``).

``SagaStack`` is one stack per saga (``stepsaga-<stage>-<saga>``); ``SagaResources`` puts
the same resources into a stack of your own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

try:
    import aws_cdk  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("stepsaga.cdk needs the cdk extra: pip install 'stepsaga[cdk]'") from exc

from stepsaga._util.lazy import lazy_getattr

if TYPE_CHECKING:
    from stepsaga.cdk._settings import (
        AutoRedrive,
        Backup,
        BundlingMode,
        Canary,
        FunctionSettings,
        SignedApi,
        SignedService,
        StageSettings,
    )
    from stepsaga.cdk._stack import SagaResources, SagaStack

#: Where each public name is defined; loaded on first use (PEP 562).
_WHERE = {
    "AutoRedrive": "stepsaga.cdk._settings",
    "Backup": "stepsaga.cdk._settings",
    "BundlingMode": "stepsaga.cdk._settings",
    "Canary": "stepsaga.cdk._settings",
    "FunctionSettings": "stepsaga.cdk._settings",
    "SignedApi": "stepsaga.cdk._settings",
    "SignedService": "stepsaga.cdk._settings",
    "StageSettings": "stepsaga.cdk._settings",
    "SagaResources": "stepsaga.cdk._stack",
    "SagaStack": "stepsaga.cdk._stack",
}

#: The same names (a literal, so linters and type checkers read it; a test keeps the
#: three statements equal).
__all__ = [
    "AutoRedrive",
    "Backup",
    "BundlingMode",
    "Canary",
    "FunctionSettings",
    "SagaResources",
    "SagaStack",
    "SignedApi",
    "SignedService",
    "StageSettings",
]


if not TYPE_CHECKING:  # so mypy sees only the names imported above
    __getattr__ = lazy_getattr(__name__, _WHERE)


def __dir__() -> list[str]:
    return __all__
