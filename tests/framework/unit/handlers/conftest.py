from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.framework.unit.handlers.helpers import World, make_world

WorldFactory = Callable[..., World]


@pytest.fixture
def make(tmp_path: Path) -> Iterator[WorldFactory]:
    opened: list[World] = []

    def build(**options: Any) -> World:
        world = make_world(tmp_path / f"home-{len(opened)}", **options)
        opened.append(world)
        return world

    yield build
    for world in opened:
        world.deps.close()


@pytest.fixture
def world(make: WorldFactory) -> World:
    return make()
