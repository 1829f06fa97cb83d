"""Retry storm: 64 simultaneous deliveries of each action → one effect, one result.

Deliveries go to the real forward handlers (reserve, refund and — with no idempotency key
downstream — shipment); effects are counted in the simulated services' own table.
``bench/storm.py`` runs every variant at full size and prints the figures.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reliability.storm import StormConfig, StormReport, run_storm

pytestmark = pytest.mark.slow


def assert_exactly_once(report: StormReport) -> None:
    print("\n".join(report.lines()))
    config = report.config
    assert report.violations == []
    assert report.deliveries == config.actions * config.deliveries
    assert report.effects == config.actions
    assert report.debited == config.actions
    assert sum(report.retries.values()) > 0, "no delivery ever met another one in flight"


def test_threads_on_one_sqlite_ledger(tmp_path: Path) -> None:
    assert_exactly_once(run_storm(StormConfig(actions=100, deliveries=64), tmp_path))


def test_processes_on_one_sqlite_ledger(tmp_path: Path) -> None:
    config = StormConfig(actions=100, deliveries=64, processes=4)
    assert_exactly_once(run_storm(config, tmp_path))


def test_threads_on_dynamodb(tmp_path: Path) -> None:
    config = StormConfig(actions=15, deliveries=64, ledger="dynamodb")
    assert_exactly_once(run_storm(config, tmp_path))
