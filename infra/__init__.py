"""The reference app's CDK app (needs the ``cdk`` extra); entry point ``infra/app.py``.

It deploys the replacement-order saga through ``stepsaga.cdk``'s public API, as a team's
app would; nothing here goes into the Lambda asset.
"""
