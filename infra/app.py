"""CDK entry point of the reference app: ``npx aws-cdk synth`` runs ``python -m infra.app``
(see cdk.json). It uses only ``stepsaga.cdk``'s public API, as a team's app would.

Context (``-c key=value``): see ``infra/config.py``; e.g. ``-c stage=prod``. The service
URLs are required: ``-c inventory_url=https://… -c payments_url=https://…
-c shipping_url=https://…``. A bad or missing value stops the synth with one line.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Final

from aws_cdk import App

from infra.config import ContextError, StageConfig
from stepsaga import Project
from stepsaga.cdk import SagaStack
from stepsaga.errors import DeploymentError

#: The project root: its pyproject.toml declares the saga and the dependencies.
ROOT: Final = Path(__file__).resolve().parent.parent
SAGA: Final = "replacement-order"
#: Project files that never run in Lambda: the project's CLI commands (``stepsaga sim``,
#: ``stepsaga demo``), whose typer/rich/local-service imports the asset does not carry.
EXCLUDE: Final = ("services/cli.py", "workflows/demo.py")


def build(app: App, project: Project | None = None, saga: str = SAGA) -> SagaStack:
    """The stack of ``saga`` for the stage in the app's context (cdk-nag applied by the
    construct)."""
    config = StageConfig.from_context(app.node)
    return SagaStack(
        app,
        project=project or Project.load(ROOT),
        saga=saga,
        settings=config.settings(),
        # The downstream services' URLs and timeouts: the app's configuration, read by its
        # Dependencies.aws (services/dependencies.py) in every saga function.
        defaults=config.services.function_settings(),
        exclude=EXCLUDE,
    )


def main(app: App | None = None) -> None:
    """Synthesize; a configuration problem exits 2 with one line on stderr, not a traceback."""
    app = app or App()
    try:
        build(app)
    except (ContextError, DeploymentError) as exc:
        print(f"stepsaga infra: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    app.synth()


if __name__ == "__main__":
    main()
