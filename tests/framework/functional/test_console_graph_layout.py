"""The execution page's graph in headless Chromium, on a linear saga (the reference order,
compensated) and on one with a per-item step and a parallel group (multi-warehouse): the
groups are boxes holding their states side by side, no two edges cross (each edge's path
sampled where the browser draws it), and the graph fits its box at 1440 and 390 px.

Skipped in one line without chromium, failed under ``CI=true``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

from stepsaga._project.home import StateHome
from stepsaga._util.clock import SystemClock
from stepsaga.console._serve import running
from tests.framework.functional.cli_support import EXAMPLES, cli, write_case, write_json
from tests.framework.functional.console_support import (
    DESKTOP,
    PHONE,
    REJECTED,
    TOKEN,
    launched_chromium,
    local_config,
    screenshot,
)

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page, ViewportSize

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@dataclass(frozen=True)
class Home:
    url: str
    linear: str
    per_item: str


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Home]:
    folder = tmp_path_factory.mktemp("graph")
    home = StateHome(folder / "home")
    linear = cli(
        home, "start", str(write_case(folder, "CASE-1")), "--faults", str(REJECTED), "--json"
    )
    case = json.loads((EXAMPLES / "case-multi-warehouse.json").read_text())
    case["approval"]["approved_at"] = SystemClock().now().strftime("%Y-%m-%dT%H:%M:%SZ")
    multi = cli(
        home,
        "start",
        "--saga",
        "multi-warehouse-replacement",
        str(write_json(folder / "multi.json", case)),
        "--faults",
        str(EXAMPLES / "faults-multi-warehouse-shipment-rejected.json"),
        "--json",
    )
    assert (linear.code, multi.code) == (0, 0), linear.err + multi.err
    with running(lambda port: local_config(home, port)) as url:
        yield Home(url, linear.json()["name"], multi.json()["name"])


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with launched_chromium() as launched:
        yield launched


#: Every edge's path as the browser draws it (40 points along it), every node's box, the
#: SVG's and its scrolling box's on-screen rectangles.
_GEOMETRY = """() => {
  const svg = document.querySelector('svg#saga-graph');
  const edges = [...svg.querySelectorAll('g.edge')].map(g => {
    const path = g.querySelector('path'), length = path.getTotalLength(), points = [];
    for (let i = 0; i <= 40; i++) {
      const p = path.getPointAtLength(length * i / 40); points.push([p.x, p.y]);
    }
    return {source: g.dataset.source, target: g.dataset.target, points};
  });
  const nodes = {};
  for (const g of svg.querySelectorAll('g.node')) {
    const r = g.querySelector('rect, polygon').getBBox();
    const s = g.querySelector('rect, polygon').getBoundingClientRect();
    nodes[g.dataset.state] = {x: r.x, y: r.y, w: r.width, h: r.height,
                              left: s.left, right: s.right};
  }
  const box = svg.closest('.graph-box').getBoundingClientRect();
  const drawn = svg.getBoundingClientRect();
  return {edges, nodes, box: [box.left, box.right], svg: [drawn.left, drawn.right],
          page: document.documentElement.scrollWidth};
}"""

Point = tuple[float, float]


def _cross(p: Point, q: Point, r: Point, s: Point) -> Point | None:
    """Where segments p-q and r-s properly intersect, if they do."""
    d = (q[0] - p[0]) * (s[1] - r[1]) - (q[1] - p[1]) * (s[0] - r[0])
    if abs(d) < 1e-9:
        return None
    t = ((r[0] - p[0]) * (s[1] - r[1]) - (r[1] - p[1]) * (s[0] - r[0])) / d
    u = ((r[0] - p[0]) * (q[1] - p[1]) - (r[1] - p[1]) * (q[0] - p[0])) / d
    if 0 < t < 1 and 0 < u < 1:
        return (p[0] + t * (q[0] - p[0]), p[1] + t * (q[1] - p[1]))
    return None


def _near(point: Point, ends: list[Point]) -> bool:
    return any(abs(point[0] - e[0]) < 4 and abs(point[1] - e[1]) < 4 for e in ends)


def crossings(edges: list[dict[str, Any]]) -> list[str]:
    """Pairs of edges whose drawn paths cross (meeting at a shared end is no crossing)."""
    found = []
    for i, a in enumerate(edges):
        for b in edges[i + 1 :]:
            ends = [a["points"][0], a["points"][-1], b["points"][0], b["points"][-1]]
            pa, pb = a["points"], b["points"]
            hit = next(
                (
                    x
                    for j in range(len(pa) - 1)
                    for k in range(len(pb) - 1)
                    if (x := _cross(pa[j], pa[j + 1], pb[k], pb[k + 1])) is not None
                    and not _near(x, ends)
                ),
                None,
            )
            if hit is not None:
                found.append(
                    f"{a['source']}->{a['target']} x {b['source']}->{b['target']} at {hit}"
                )
    return found


def _inside(node: dict[str, float], box: dict[str, float]) -> bool:
    return (
        box["x"] <= node["x"]
        and node["x"] + node["w"] <= box["x"] + box["w"]
        and box["y"] <= node["y"]
        and node["y"] + node["h"] <= box["y"] + box["h"]
    )


def _geometry(browser: Browser, home: Home, name: str, viewport: ViewportSize) -> Any:
    context = browser.new_context(viewport=viewport)
    page: Page = context.new_page()
    page.goto(f"{home.url}?token={TOKEN}")
    page.goto(f"{home.url}executions/{name}?tenant=acme")
    found = page.evaluate(_GEOMETRY)
    if viewport is DESKTOP:
        screenshot(page, f"graph-{name}")
    context.close()
    return found


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1440", "390"])
def test_a_linear_saga_draws_without_crossings_and_fits(
    browser: Browser, shared: Home, viewport: ViewportSize
) -> None:
    drawn = _geometry(browser, shared, shared.linear, viewport)
    assert len(drawn["edges"]) >= 8
    assert crossings(drawn["edges"]) == []
    nodes = drawn["nodes"]
    column = [nodes[s] for s in ("ReserveStock", "RefundPayment", "CreateShipment")]
    assert len({round(n["x"] + n["w"] / 2) for n in column}) == 1  # one straight line
    assert [n["y"] for n in column] == sorted(n["y"] for n in column)
    _fits(drawn, viewport)


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1440", "390"])
def test_a_parallel_and_per_item_saga_draws_groups_without_crossings_and_fits(
    browser: Browser, shared: Home, viewport: ViewportSize
) -> None:
    drawn = _geometry(browser, shared, shared.per_item, viewport)
    assert crossings(drawn["edges"]) == []
    nodes = drawn["nodes"]
    # the parallel group holds its two branches, side by side
    group, refund, ship = (nodes[s] for s in ("RefundAndShip", "RefundPayment", "CreateShipment"))
    assert _inside(refund, group)
    assert _inside(ship, group)
    assert refund["y"] == ship["y"]
    assert refund["x"] + refund["w"] <= ship["x"] or ship["x"] + ship["w"] <= refund["x"]
    # each per-item step sits in its Map's box
    assert _inside(nodes["ReserveLine"], nodes["ReserveLines"])
    assert _inside(nodes["ReleaseLine"], nodes["UndoReserveLineItems"])
    # the groups follow each other down the page
    order = ("ReserveLines", "RefundAndShip", "UndoReserveLineItems")
    assert [nodes[s]["y"] for s in order] == sorted(nodes[s]["y"] for s in order)
    _fits(drawn, viewport)


def _fits(drawn: dict[str, Any], viewport: ViewportSize) -> None:
    """The SVG inside its box, every node inside the SVG, the page no wider than the
    screen."""
    box_left, box_right = drawn["box"]
    svg_left, svg_right = drawn["svg"]
    assert box_left - 0.5 <= svg_left
    assert svg_right <= box_right + 0.5
    for name, node in drawn["nodes"].items():
        assert svg_left - 0.5 <= node["left"], name
        assert node["right"] <= svg_right + 0.5, name
    assert drawn["page"] <= viewport["width"]
