"""stepsaga: sagas on AWS Step Functions whose side effects happen at most once.

The public entry points live in the subpackages: ``stepsaga.ledger`` (the action ledger),
``stepsaga.workflow`` (saga DSL and ASL compiler), ``stepsaga.engine`` (embedded engine),
``stepsaga.services`` (downstream adapters) and ``stepsaga.testing`` (test helpers).
"""

__version__ = "0.1.0"
