"""Finding an execution in headless Chromium: the search box takes an order reference (a
value of the case's input) as well as a case id or an execution name, and the list's
pages say where they are in the total ("3-4 of 5", with an en dash); on AWS, which cannot
count, "more".

Skipped in one line without chromium or axe-core, failed under ``CI=true``."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from stepsaga._project.home import StateHome
from stepsaga.backends._local import LocalBackend
from stepsaga.console._serve import running
from tests.framework.functional.aws_support import fake_aws
from tests.framework.functional.cli_support import case_data, cli, write_case
from tests.framework.functional.console_support import (
    PHONE,
    TOKEN,
    aws_config,
    axe_script,
    launched_chromium,
    local_config,
)
from workflows.project import reference_project

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

pytestmark = [pytest.mark.browser, pytest.mark.slow]

#: case id -> order id; ORD-SHARED is on two cases (a reorder), the rest on one each.
ORDERS = {
    "CASE-1": "ORD-501",
    "CASE-2": "ORD-502",
    "CASE-3": "ORD-SHARED",
    "CASE-4": "ORD-SHARED",
    "CASE-5": "ORD-505",
}


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> StateHome:
    folder = tmp_path_factory.mktemp("finding")
    made = StateHome(folder / "home")
    for case, order in ORDERS.items():
        result = cli(made, "start", str(write_case(folder, case, order_id=order)), "--json")
        assert result.code == 0, result.err
    return made


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with launched_chromium() as launched:
        yield launched


@pytest.fixture
def console(home: StateHome) -> Iterator[str]:
    """The console with two executions a page (five in the home: three pages)."""
    with running(lambda port: dataclasses.replace(local_config(home, port), page_size=2)) as url:
        yield url


@pytest.fixture
def page(browser: Browser, console: str) -> Iterator[Page]:
    context = browser.new_context(bypass_csp=True)  # for axe's script only
    opened = context.new_page()
    opened.goto(f"{console}?token={TOKEN}")
    yield opened
    context.close()


def _search(page: Page, text: str) -> None:
    page.fill("#search-q", text)
    with page.expect_navigation():
        page.press("#search-q", "Enter")


def test_the_search_box_finds_an_execution_by_its_order_reference(page: Page, console: str) -> None:
    page.goto(f"{console}executions")
    _search(page, "ord-502")  # as typed by a person: case does not matter
    assert page.url.endswith("/executions/acme-CASE-2-r1?tenant=acme")
    page.locator("#case-input summary").click()
    assert '"ORD-502"' in page.locator("#case-input pre").inner_text()

    _search(page, "ORD-SHARED")  # a reorder: both cases, newest first
    assert page.locator("h1").inner_text() == "Executions whose case has “ORD-SHARED”"
    rows = page.locator("table#executions tbody tr")
    assert [r.get_attribute("data-name") for r in rows.all()] == [
        "acme-CASE-4-r1",
        "acme-CASE-3-r1",
    ]
    assert page.locator("#search-summary").inner_text().startswith("2 execution(s)")
    from tests.framework.functional.test_console_operator import _serious

    assert _serious(page, axe_script()) == []
    page.set_viewport_size(PHONE)
    assert _serious(page, axe_script()) == []
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.set_viewport_size({"width": 1280, "height": 720})

    _search(page, "CASE-5")  # a case id, and an execution name, still go straight there
    assert page.url.endswith("/executions/acme-CASE-5-r1?tenant=acme")
    _search(page, "acme-CASE-1-r1")
    assert page.url.endswith("/executions/acme-CASE-1-r1?tenant=acme")

    _search(page, "ORD-999")
    assert "Nothing found for 'ORD-999'" in page.locator("main").inner_text()
    assert "a value of a case's input (an order id)" in page.locator("main").inner_text()


def test_the_search_looks_at_a_bounded_window_of_the_newest_executions(
    home: StateHome, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What makes it bounded: an order older than the window is not found."""
    import stepsaga.backends._local as local

    with LocalBackend(home, reference_project()) as backend:
        assert [e.case_id for e in backend.find_executions("ORD-501")] == ["CASE-1"]
        monkeypatch.setattr(local, "SEARCH_WINDOW", 4)  # CASE-1 is the oldest of five
        assert backend.find_executions("ORD-501") == []
        assert [e.case_id for e in backend.find_executions("ORD-505")] == ["CASE-5"]


def test_previous_and_next_pages_show_where_they_are_in_the_total(page: Page, console: str) -> None:
    page.goto(f"{console}executions")
    pages = page.locator("nav.pages")
    assert pages.locator("#page-range").inner_text() == "1\u20132 of 5 · page 1"
    page.click("#next-page")
    assert pages.locator("#page-range").inner_text() == "3\u20134 of 5 · page 2"
    page.click("#next-page")
    assert pages.locator("#page-range").inner_text() == "5\u20135 of 5 · page 3"
    assert page.locator("#next-page").count() == 0
    page.click("#prev-page")
    assert pages.locator("#page-range").inner_text() == "3\u20134 of 5 · page 2"
    # a filter is counted too
    page.goto(f"{console}executions?status=SUCCEEDED&tenant=ACME")
    assert page.locator("#page-range").inner_text() == "1\u20132 of 5 · page 1"
    # an outcome is decided per row: no count, "more" while there is a next page
    page.goto(f"{console}executions?outcome=completed")
    assert page.locator("#page-range").inner_text() == "1\u20132 of more · page 1"


def test_on_aws_the_pages_say_more_instead_of_a_total(browser: Browser) -> None:
    with fake_aws() as aws:
        for case in ("CASE-1", "CASE-2", "CASE-3"):
            aws.start_recorded(case_data(case))
        config = dataclasses.replace(aws_config(aws), page_size=2)
        with running(lambda port: dataclasses.replace(config, port=port)) as url:
            context = browser.new_context()
            page = context.new_page()
            page.goto(f"{url}?token={TOKEN}")
            page.goto(f"{url}executions")
            assert page.locator("#page-range").inner_text() == "1\u20132 of more · page 1"
            page.click("#next-page")
            assert page.locator("#page-range").inner_text() == "3\u20133 of 3 · page 2"
            _search(page, "ORD-77")  # its order, but AWS lists no inputs: names and case ids only
            assert "Nothing found for 'ORD-77'" in page.locator("main").inner_text()
            assert "order id" not in page.locator("main").inner_text()
            context.close()
