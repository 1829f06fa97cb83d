"""What an operator types survives the console: in headless Chromium, a half-typed note comes
back after the console restarts (same token, as ``--token-file`` keeps it) and after the
styled 403 of a restart with a new token; and a live page does not refresh while you type,
keeps the field's value and focus, and refreshes once you stop.

Skipped in one line without chromium, failed under ``CI=true``."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

from stepsaga._project.home import StateHome
from stepsaga.console._serve import running
from tests.framework.functional.cli_support import write_faults
from tests.framework.functional.console_support import (
    TOKEN,
    UNVERIFIABLE,
    launched_chromium,
    local_config,
    start_case,
)

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

pytestmark = [pytest.mark.browser, pytest.mark.slow]

#: The start fails (8 throttled refunds); its redrive's succeeding refund is slow, so the
#: execution page stays live (refreshing every second) for a while.
SLOW_REDRIVE = [
    {"service": "payments", "operation": "refund", "times": 8, "fault": "throttle"},
    {"service": "payments", "operation": "refund", "attempt": 9, "fault": "slow", "seconds": 12},
]
OTHER_TOKEN = "another-token-after-a-restart-0123456789"


@dataclass(frozen=True)
class Home:
    home: StateHome
    waiting: dict[str, Any]
    failed: dict[str, Any]


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Home:
    folder = tmp_path_factory.mktemp("typing")
    home = StateHome(folder / "home")
    waiting = start_case(home, folder, "CASE-2", UNVERIFIABLE)
    failed = start_case(home, folder, "CASE-3", write_faults(folder, *SLOW_REDRIVE))
    assert failed["status"] == "FAILED"
    return Home(home, waiting, failed)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with launched_chromium() as launched:
        yield launched


def _drafts(page: Page) -> dict[str, str]:
    found: dict[str, str] = page.evaluate(
        "() => Object.fromEntries(Object.keys(localStorage)"
        ".filter(k => k.startsWith('stepsaga-draft:')).map(k => [k, localStorage.getItem(k)]))"
    )
    return found


def _until(condition: Callable[[], bool], seconds: float) -> None:
    """Poll from Python (the console's CSP refuses playwright's string predicates)."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def test_a_half_typed_note_survives_a_restart_and_the_403_of_a_new_token(
    browser: Browser, shared: Home
) -> None:
    item = shared.waiting["open_items"][0]
    note = "carrier portal shows parcel 4711 handed over"
    with running(lambda port: local_config(shared.home, port)) as url:
        port = int(url.rstrip("/").rsplit(":", 1)[1])
        context = browser.new_context()
        page = context.new_page()
        page.on("dialog", lambda dialog: dialog.accept())
        page.goto(f"{url}?token={TOKEN}")
        page.goto(f"{url}reconciliation/{item}")
        page.check("input[name=outcome][value=applied]")
        page.locator("#resolve-note").press_sequentially(note[:20])
        page.locator("#resolve-note").press_sequentially(note[20:])
    # restarted on the same port with the same token (what --token-file keeps)
    with running(lambda port: local_config(shared.home, port), port=port) as url:
        page.reload()
        assert page.locator("#resolve-note").input_value() == note
        assert page.locator("input[name=outcome][value=applied]").is_checked()
    # restarted with a new token: the send meets the styled 403, the draft stays
    with running(
        lambda port: dataclasses.replace(local_config(shared.home, port), token=OTHER_TOKEN),
        port=port,
    ) as url:
        with page.expect_navigation():
            page.click("#resolve-form button[type=submit]")
        assert page.locator("h1").inner_text() == "Open the console's URL again"
        assert "comes back" in page.locator("main").inner_text()
        assert note in _drafts(page).values()
        page.goto(f"{url}?token={OTHER_TOKEN}")
        page.goto(f"{url}reconciliation/{item}")
        assert page.locator("#resolve-note").input_value() == note
        assert page.locator("input[name=outcome][value=applied]").is_checked()
        # sent and taken: the draft is gone
        with page.expect_navigation():
            page.click("#resolve-form button[type=submit]")
        page.wait_for_selector("#job[data-state=done]", timeout=30_000)
        assert page.locator("#item-note").inner_text() == note
        assert _drafts(page) == {}
        context.close()


def test_a_live_page_waits_while_you_type_and_keeps_value_and_focus(
    browser: Browser, shared: Home
) -> None:
    """The execution page refreshes every second during a redrive; typing into the stop
    note holds the refresh off (no swap while keys come within 1.5 s of each other), and
    the refresh that follows keeps the text, the focus and the caret."""
    from playwright.sync_api import expect

    name = shared.failed["name"]
    with running(lambda port: local_config(shared.home, port)) as url:
        context = browser.new_context()
        page = context.new_page()
        page.on("dialog", lambda dialog: dialog.accept())
        page.goto(f"{url}?token={TOKEN}")
        page.goto(f"{url}executions/{name}?tenant=acme")
        with page.expect_navigation():
            page.click("form[action$='/redrive'] button")
        field = page.locator("#stop-note")
        expect(field).to_be_visible(timeout=15_000)  # a live refresh brought the stop form
        region = page.locator("#live")
        _until(lambda: bool(region.get_attribute("data-refreshed")), 5)
        typed = "customer asked to hold"
        field.click()
        began = time.time() * 1000
        field.press_sequentially(typed, delay=250)  # about 5.5 s of typing
        ended = time.time() * 1000
        refreshed = float(region.get_attribute("data-refreshed") or 0)
        # the last refresh finished before the second key at the latest
        assert refreshed < began + 600, (refreshed - began, ended - began)
        assert "paused while you type" in page.locator(".live-status").inner_text()
        # once typing stops the page refreshes again, keeping the text, focus and caret
        _until(lambda: float(region.get_attribute("data-refreshed") or 0) > ended, 5)
        assert field.input_value() == typed
        assert page.evaluate("document.activeElement.id") == "stop-note"
        assert page.evaluate("document.activeElement.selectionStart") == len(typed)
        assert page.locator("#job").get_attribute("data-state") in ("queued", "running")
        page.wait_for_selector("#job[data-state=done]", timeout=60_000)
        context.close()
