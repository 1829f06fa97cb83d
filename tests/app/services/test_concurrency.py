"""Concurrent and crashing callers: one effect per key, no oversold stock, nothing half-done."""

from __future__ import annotations

import multiprocessing
import signal
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from services import (
    Operation,
    ReserveRequest,
    Services,
    Simulation,
    open_simulated_services,
)
from stepsaga._project.home import StateHome
from stepsaga.errors import BusinessRejectedError
from tests.app.services.conftest import ctx_for, refund_request

REPO = Path(__file__).parents[3]


def test_threads_refunding_with_one_key_make_one_refund(
    services: Services, simulation: Simulation
) -> None:
    with ThreadPoolExecutor(max_workers=16) as pool:
        results = list(
            pool.map(
                lambda _: services.payments.refund(ctx_for("refund"), refund_request()), range(64)
            )
        )
    assert len({r.refund_id for r in results}) == 1
    assert len(simulation.effects()) == 1


def test_threads_never_oversell_stock(services: Services, simulation: Simulation) -> None:
    simulation.set_stock("acme", "SKU-1", "eu", 10)

    def reserve(i: int) -> bool:
        try:
            services.inventory.reserve(
                ctx_for("reserve"), ReserveRequest(f"R-{i}", "SKU-1", 3, "eu")
            )
        except BusinessRejectedError:
            return False
        return True

    with ThreadPoolExecutor(max_workers=8) as pool:
        succeeded = sum(pool.map(reserve, range(12)))
    assert succeeded == 3
    assert simulation.stock("acme", "SKU-1", "eu") == 1
    assert len(simulation.effects()) == 3


def _refund_in_a_process(root: str) -> str:
    services = open_simulated_services(StateHome(Path(root)))
    refunds = {
        services.payments.refund(ctx_for("refund"), refund_request()).refund_id for _ in range(10)
    }
    (refund_id,) = refunds
    return refund_id


@pytest.mark.slow  # four spawned interpreters
def test_processes_refunding_with_one_key_make_one_refund(
    home: StateHome, simulation: Simulation
) -> None:
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        ids = pool.map(_refund_in_a_process, [str(home.root)] * 4)
    assert len(set(ids)) == 1
    assert len(simulation.effects()) == 1
    assert simulation.calls("acme", "CASE-1001", Operation.REFUND) == 40


def test_a_real_crash_after_the_effect_leaves_the_effect_committed(
    home: StateHome, simulation: Simulation
) -> None:
    """The default crash action SIGKILLs the process: no cleanup runs, yet the effect and its
    row are on disk, and the next process sees the same faults and counts."""
    script = textwrap.dedent(
        f"""
        from pathlib import Path
        from stepsaga._project.home import StateHome
        from services import open_simulated_services, open_simulation, parse_faults
        from tests.app.services.conftest import ctx_for, refund_request
        home = StateHome(Path({str(home.root)!r}))
        open_simulation(home).attach_faults("acme", "CASE-1001", parse_faults({{"faults": [
            {{"service": "payments", "operation": "refund", "attempt": 1,
              "fault": "crash_after_effect"}}]}}))
        services = open_simulated_services(home)
        services.payments.refund(ctx_for("refund"), refund_request())
        print("survived")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert "survived" not in done.stdout
    (effect,) = simulation.effects()
    assert effect.operation is Operation.REFUND
    # a redrive in this process: the attached rule already fired on attempt 1
    services = open_simulated_services(home)
    services.payments.refund(ctx_for("refund"), refund_request())
    assert len(simulation.effects()) == 1
    assert simulation.calls("acme", "CASE-1001", Operation.REFUND) == 2
