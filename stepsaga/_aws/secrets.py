"""Downstream credentials inside a Lambda function: read by name, never put in variables.

The construct gives a function the secrets its app configured (``FunctionSettings.secrets``
for Secrets Manager, ``FunctionSettings.parameters`` for SSM parameters): the variable
holds only the secret's ARN or the parameter's name, the function's role may read exactly
those, and ``STEPSAGA_SECRET_SOURCES`` says which store each variable names. An app's
``Dependencies.aws(ctx)`` reads a value with ``ctx.secrets.get("BILLING_TOKEN_ARN")``.

Values are fetched with Powertools' parameters utility (cached for ``MAX_AGE_SECONDS``, so a
rotated secret is picked up within minutes) and are never logged: ``Secrets`` holds names
only, and its errors name the variable, never a value.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Final

from stepsaga.errors import InvalidInputError, TransientError

__all__ = ["ENV_SECRET_SOURCES", "MAX_AGE_SECONDS", "SecretStore", "Secrets"]

#: JSON object: variable name → ``secretsmanager`` | ``ssm`` (set by the construct).
ENV_SECRET_SOURCES: Final = "STEPSAGA_SECRET_SOURCES"  # noqa: S105 (a variable name)
MAX_AGE_SECONDS: Final = 300


class SecretStore(StrEnum):
    SECRETS_MANAGER = "secretsmanager"
    SSM = "ssm"


Fetch = Callable[[SecretStore, str], str]


def _powertools_fetch(store: SecretStore, reference: str) -> str:
    from aws_lambda_powertools.utilities import parameters

    if store is SecretStore.SECRETS_MANAGER:
        value = parameters.get_secret(reference, max_age=MAX_AGE_SECONDS)
    else:
        value = parameters.get_parameter(reference, decrypt=True, max_age=MAX_AGE_SECONDS)
    if not isinstance(value, str):
        raise TransientError("secret: not a string value (binary secrets are not supported)")
    return value


@dataclass(frozen=True)
class Secrets:
    """The secrets one function may read, by the variable that names each."""

    sources: Mapping[str, SecretStore]
    environ: Mapping[str, str] = field(repr=False)
    fetch: Fetch = field(default=_powertools_fetch, repr=False, compare=False)

    @classmethod
    def from_environ(cls, environ: Mapping[str, str], fetch: Fetch | None = None) -> Secrets:
        raw = environ.get(ENV_SECRET_SOURCES, "").strip() or "{}"
        try:
            parsed = json.loads(raw)
            sources = {str(k): SecretStore(v) for k, v in dict(parsed).items()}
        except (ValueError, TypeError) as exc:
            raise InvalidInputError(
                f"{ENV_SECRET_SOURCES}: not a JSON object of variable → secretsmanager|ssm",
                field=ENV_SECRET_SOURCES,
            ) from exc
        return cls(sources, environ, fetch or _powertools_fetch)

    def get(self, variable: str) -> str:
        """The current value of the secret ``variable`` names."""
        store = self.sources.get(variable)
        reference = self.environ.get(variable, "").strip()
        if store is None or not reference:
            granted = ", ".join(sorted(self.sources)) or "none"
            raise InvalidInputError(
                f"secret {variable}: not configured for this function (its secrets: {granted})",
                field=variable,
            )
        try:
            return self.fetch(store, reference)
        except InvalidInputError:
            raise
        except Exception as exc:  # the value never reaches the message: name the variable
            raise TransientError(
                f"secret {variable}: could not be read from {store.value} ({type(exc).__name__})",
                variable=variable,
            ) from exc
