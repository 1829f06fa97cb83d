"""CDK entry point: ``npx aws-cdk synth`` runs ``python -m infra.app`` (see cdk.json).

Context (``-c key=value``): see ``infra/config.py``; e.g. ``-c stage=prod``. The service
URLs are required: ``-c inventory_url=https://… -c payments_url=https://…
-c shipping_url=https://…``. A bad or missing value stops the synth with one line.
"""

from __future__ import annotations

import sys

from aws_cdk import App, Aspects
from cdk_nag import AwsSolutionsChecks

from infra.config import ContextError, StageConfig
from infra.permissions import REPLACEMENT_ORDER_ACCESS
from infra.saga_deployment import SagaDeployment
from infra.stack import StepSagaStack
from stepsaga import deployment
from stepsaga.workflow import compile as compile_saga
from workflows.replacement_order import saga as replacement_order_saga


def replacement_order() -> SagaDeployment:
    """The replacement-order saga, compiled from ``workflows/replacement_order.py``."""
    saga = replacement_order_saga
    return SagaDeployment(
        name=saga.name,
        functions=saga.functions,
        definition=compile_saga(saga),
        access=REPLACEMENT_ORDER_ACCESS,
        saga_ref="workflows.replacement_order:saga",
        dependencies_ref="services.dependencies:dependencies",
        substitutions_for=saga.definition_substitutions,
    )


def build(app: App, saga: SagaDeployment) -> StepSagaStack:
    """The stack for the stage in the app's context, checked by cdk-nag at synth."""
    config = StageConfig.from_context(app.node)
    stack = StepSagaStack(app, deployment.stack_name(config.stage), saga=saga, config=config)
    Aspects.of(app).add(AwsSolutionsChecks(verbose=True))
    return stack


def main(app: App | None = None) -> None:
    """Synthesize; a context problem exits 2 with one line on stderr, not a traceback."""
    app = app or App()
    try:
        build(app, replacement_order())
    except ContextError as exc:
        print(f"stepsaga infra: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    app.synth()


if __name__ == "__main__":
    main()
