"""The CDK app for AWS (needs the ``infra`` extra); entry point ``infra/app.py``.

Imports nothing: ``infra/runtime`` is bundled into the Lambda asset with this file.
"""
