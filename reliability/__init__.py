"""Chaos harness: approved cases under random faults and real SIGKILLs, then recovery as an
operator does it, then invariants checked from the outside truth.

Shared by ``tests/framework/chaos/`` (small, in CI) and ``bench/chaos.py`` (large). Everything is
decided by a seed (``plan.py``); the saga runs in forked child processes so a kill is a
real ``SIGKILL`` (``runner.py``, ``kills.py``); ``harness.py`` plays the operator;
``invariants.py`` counts effects in the simulated services' own table and reads the ledger,
never trusting what the code under test says about itself.
"""

from reliability.harness import ChaosConfig, ChaosReport, run_chaos
from reliability.invariants import Violation
from reliability.plan import CasePlan, KillPoint, KillSite, make_plans

__all__ = [
    "CasePlan",
    "ChaosConfig",
    "ChaosReport",
    "KillPoint",
    "KillSite",
    "Violation",
    "make_plans",
    "run_chaos",
]
