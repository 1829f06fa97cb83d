"""Lambda handlers that exist for the stack's monitoring (bundled with the saga's code).

Nothing here imports ``aws_cdk``: this package runs inside Lambda.
"""
