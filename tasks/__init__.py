"""The replacement-order saga's step handlers, one module per step.

Each module defines one ``stepsaga.StepHandler`` named like its step (the saga's default
reference is ``tasks.<operation>:<StepName>``): which parameters are consequential, how to
perform the effect with the action key, how to look for it downstream. The shared
machinery (ledger, decisions per effect class, errors, logs, metrics, the Lambda entry
point) is stepsaga's.
"""
