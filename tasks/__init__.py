"""Lambda handlers of the forward steps, one module per step.

Each module defines the ``OPERATION`` it performs (which parameters are consequential, how
to perform the effect with the action key, how to look for it downstream) and a
module-level ``handler`` — the Lambda entry point, built lazily from the environment.
The shared machinery (ledger, decisions per effect class, errors, logs, metrics) lives in
``stepsaga.handlers``.
"""
