"""Fixtures for engine tests: a manual clock that sleeping advances, a seeded RNG."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from stepsaga._project.home import StateHome
from stepsaga._util.clock import ManualClock
from stepsaga.engine import LocalEngine
from stepsaga.engine._models import EngineEvent

MakeEngine = Callable[..., LocalEngine]


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def home(tmp_path: Path) -> StateHome:
    return StateHome(tmp_path / "home")


@pytest.fixture
def make_engine(home: StateHome, clock: ManualClock) -> Iterator[MakeEngine]:
    engines: list[LocalEngine] = []

    def make(registry: Mapping[str, Any] | None = None, **options: Any) -> LocalEngine:
        options.setdefault("clock", clock)
        options.setdefault("sleeper", clock.advance)
        options.setdefault("time_scale", 1.0)
        options.setdefault("rng", random.Random(7))
        engine = LocalEngine(home, registry or {}, **options)
        engines.append(engine)
        return engine

    yield make
    for engine in engines:
        engine.close()


@pytest.fixture
def events() -> list[EngineEvent]:
    return []
