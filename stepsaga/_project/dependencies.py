"""What a project gives the framework to build its handlers' own clients.

A project names one ``Dependencies`` object in ``[tool.stepsaga] dependencies =
"module:attr"``. The framework calls ``local(ctx)`` on the embedded backend and
``aws(ctx)`` inside a Lambda function, and passes what they return to every
``StepHandler.perform``/``lookup`` as ``clients``. If that object has ``close()``, it is
called when the handlers are done (end of a CLI command; never on a warm Lambda).

Optional: a project whose local clients simulate faults (``stepsaga start --faults FILE``)
also implements ``SupportsFaults``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from stepsaga._project.home import StateHome
from stepsaga._util.clock import Clock

if TYPE_CHECKING:
    from stepsaga._aws.secrets import Secrets
    from stepsaga._aws.signing import SignedApis

D_co = TypeVar("D_co", covariant=True)

__all__ = [
    "AwsContext",
    "Dependencies",
    "LocalContext",
    "NoDependencies",
    "SupportsFaults",
    "close_clients",
]


@dataclass(frozen=True)
class LocalContext:
    """The embedded backend: state lives under ``home``; ``sleep`` is scaled like the
    engine's own waits (``--time-scale``), so simulated slowness is too."""

    home: StateHome
    clock: Clock
    sleep: Callable[[float], None]


@dataclass(frozen=True)
class AwsContext:
    """Inside a Lambda function: configuration comes from ``environ`` (the function's
    environment, as the CDK construct set it); credentials from ``secrets``
    (``ctx.secrets.get("BILLING_TOKEN_ARN")``, ``stepsaga._aws.secrets``) or, for the app's
    IAM-authorized APIs, the role itself (``ctx.signed_apis.client("PAYMENTS_API_URL")``,
    ``stepsaga._aws.signing``)."""

    clock: Clock
    environ: Mapping[str, str]

    @property
    def secrets(self) -> Secrets:
        """The secrets this function may read (names only; values fetched on ``get``)."""
        from stepsaga._aws.secrets import Secrets

        return Secrets.from_environ(self.environ)

    @property
    def signed_apis(self) -> SignedApis:
        """The SigV4-signed APIs this function may call (``FunctionSettings.signed_apis``)."""
        from stepsaga._aws.signing import SignedApis

        return SignedApis.from_environ(self.environ)


class Dependencies(Protocol[D_co]):
    """Builds the app's clients, per backend."""

    def local(self, ctx: LocalContext) -> D_co:
        """Clients for the embedded backend (fakes or simulated services)."""
        ...

    def aws(self, ctx: AwsContext) -> D_co:
        """Clients inside a Lambda function (real services)."""
        ...


@runtime_checkable
class SupportsFaults(Protocol):
    """Local clients that misbehave on purpose (``stepsaga start --faults FILE``)."""

    def load_faults(self, path: Path) -> object:
        """Read and validate a faults file; raise ``InvalidInputError`` naming the field."""
        ...

    def attach_faults(
        self, ctx: LocalContext, tenant_id: str, case_id: str, faults: object
    ) -> None:
        """Make ``faults`` apply to this case's calls, in this and later processes."""
        ...


class NoDependencies:
    """For sagas whose handlers need no clients: ``clients`` is ``None``."""

    def local(self, ctx: LocalContext) -> None:
        return None

    def aws(self, ctx: AwsContext) -> None:
        return None


def close_clients(clients: Any) -> None:
    """Close what a ``Dependencies`` built, if it can be closed."""
    close = getattr(clients, "close", None)
    if callable(close):
        close()
