"""``--backend aws``: the operator's verbs against the deployed CDK stack.

``settings.py`` finds the stack (outputs or environment), ``clients.py`` makes the boto3
clients, ``errors.py`` maps AWS errors to ours, ``pointers.py`` records and reads the
case → execution pointers, ``locate.py`` finds the execution a reference names (through
them), ``history.py`` reads histories, ``backend.py`` holds the verbs.
:func:`open_backend` is what the CLI calls (``stepsaga.cli._backend``).
"""

from __future__ import annotations

import os
from typing import Protocol

from stepsaga._project.project import Project
from stepsaga.backends._aws.backend import AwsBackend, redrive_token
from stepsaga.backends._aws.clients import Clients, FixedClients, SessionClients
from stepsaga.backends._aws.settings import (
    ENV_WAIT_SECONDS,
    AwsSettings,
    load_settings,
    wait_seconds_from,
)


class CliOptions(Protocol):
    """What the CLI's root options give this backend (``stepsaga.cli._common.CliContext``)."""

    @property
    def stack(self) -> str | None: ...


def open_backend(
    cli: CliOptions, project: Project, saga: str | None = None, *, clients: Clients | None = None
) -> AwsBackend:
    """The backend for ``--backend aws`` (``--stack``, else the environment) running
    ``saga`` of ``project``. Opening it calls nothing on AWS: the stack is read on the
    first verb that needs it."""
    environ = dict(os.environ)
    made = clients or SessionClients()
    return AwsBackend(
        lambda: load_settings(stack=cli.stack, environ=environ, cloudformation=made.cloudformation),
        project=project,
        saga=saga,
        clients=made,
        wait_seconds=wait_seconds_from(environ),
    )


def ledger_url(cli: CliOptions, *, clients: Clients | None = None) -> str:
    """The deployed ledger table as an ``open_ledger`` URL (``stepsaga ledger`` on AWS)."""
    made = clients or SessionClients()
    settings = load_settings(
        stack=cli.stack, environ=dict(os.environ), cloudformation=made.cloudformation
    )
    return f"dynamodb://{settings.ledger_table_name}?region={settings.region}"


__all__ = [
    "ENV_WAIT_SECONDS",
    "AwsBackend",
    "AwsSettings",
    "Clients",
    "FixedClients",
    "SessionClients",
    "ledger_url",
    "load_settings",
    "open_backend",
    "redrive_token",
]
