"""The Lambda handler of every stepsaga function: ``stepsaga.lambda_handler.handler``.

Set ``STEPSAGA_SAGA``, ``STEPSAGA_FUNCTION`` and ``STEPSAGA_DEPENDENCIES`` in the function's
environment (the CDK construct does); see ``stepsaga.handlers.entrypoint``.
"""

from stepsaga.handlers.entrypoint import handler

__all__ = ["handler"]
