"""Dual control from one local console, in headless Chromium: two people each open their
personal URL (``--operators-file``); the first approval by alice leaves her waiting for a
second person, in any tab, while bob's approval completes it; the console's own token
still acts as the OS user.

Skipped in one line without chromium, failed under ``CI=true``."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from stepsaga._project.home import StateHome
from stepsaga.backends._local import local_operator
from stepsaga.console._security import add_operator, csrf_token, read_operators
from stepsaga.console._serve import running
from tests.framework.functional.cli_support import cli, write_case, write_faults
from tests.framework.functional.console_support import TOKEN, launched_chromium, local_config
from tests.framework.functional.test_console_operator import REFUND_UNKNOWN

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with launched_chromium() as launched:
        yield launched


def _dual_case(home: StateHome, folder: Path, case: str) -> str:
    faults = write_faults(folder, *REFUND_UNKNOWN, name=f"{case}.faults.json")
    result = cli(home, "start", str(write_case(folder, case)), "--faults", str(faults), "--json")
    assert result.code == 0, result.err
    started: dict[str, Any] = result.json()
    assert started["outcome"] == "awaiting_reconciliation"
    item: str = started["open_items"][0]
    return item


def _person(browser: Browser, url: str, token: str) -> Page:
    page = browser.new_context().new_page()
    page.on("dialog", lambda dialog: dialog.accept())
    page.goto(f"{url}?token={token}")
    return page


def _not_applied(page: Page, note: str) -> None:
    page.check("input[name=outcome][value=not_applied]")
    page.fill("#resolve-note", note)
    with page.expect_navigation():
        page.click("#resolve-form button[type=submit]")


def test_two_people_complete_dual_control_from_one_local_console(
    browser: Browser, tmp_path: Path
) -> None:
    home = StateHome(tmp_path / "home")
    item = _dual_case(home, tmp_path, "CASE-4")
    people = tmp_path / "operators"
    alice, bob = add_operator(people, "alice"), add_operator(people, "bob")
    config = local_config(home)
    with running(
        lambda port: dataclasses.replace(config, port=port, operators=read_operators(people))
    ) as url:
        first = _person(browser, url, alice)
        first.goto(f"{url}reconciliation/{item}")
        assert first.locator("#operator").inner_text() == "alice"
        _not_applied(first, "the PSP shows no refund")
        first.wait_for_selector("#awaiting-other")
        assert "Waiting for a second person" in first.locator("#awaiting-other").inner_text()
        assert "alice" in first.locator("#item-first-approval").inner_text()
        # alice in another tab: still no form; a hand-made POST as her is refused
        tab = first.context.new_page()
        tab.goto(f"{url}reconciliation/{item}")
        assert tab.locator("#awaiting-other").is_visible()
        assert tab.locator("#resolve-form").count() == 0
        forced = tab.request.post(
            f"{url}reconciliation/{item}/resolve",
            form={"csrf": csrf_token(TOKEN), "outcome": "not_applied", "note": "me again"},
        )
        assert forced.status == 409, forced.text()
        assert "different person" in forced.text() or "second" in forced.text()

        second = _person(browser, url, bob)
        second.goto(f"{url}reconciliation/{item}")
        assert second.locator("#operator").inner_text() == "bob"
        assert second.locator("#resolve-form").is_visible()
        _not_applied(second, "confirmed with the PSP: no refund")
        second.wait_for_selector("#job[data-state=done]", timeout=30_000)
        assert second.locator("#item-outcome").inner_text() == "not_applied"
        deciders = [d.inner_text() for d in second.locator(".audit-decider").all()]
        assert [d.split(" at ")[0] for d in deciders] == ["alice", "bob"]
        first.context.close()
        second.context.close()


def test_the_consoles_own_token_still_acts_as_the_os_user(browser: Browser, tmp_path: Path) -> None:
    """The single-user default: without a personal token the backend's operator acts; with
    an operators file, the console's own URL still works as before."""
    home = StateHome(tmp_path / "home")
    item = _dual_case(home, tmp_path, "CASE-6")
    people = tmp_path / "operators"
    add_operator(people, "alice")
    config = local_config(home)
    with running(
        lambda port: dataclasses.replace(config, port=port, operators=read_operators(people))
    ) as url:
        owner = _person(browser, url, TOKEN)
        owner.goto(f"{url}reconciliation/{item}")
        assert owner.locator("#operator").inner_text() == local_operator()
        _not_applied(owner, "the PSP shows no refund")
        owner.wait_for_selector("#awaiting-other")
        assert local_operator() in owner.locator("#item-first-approval").inner_text()
        stranger = browser.new_context().new_page()
        refused = stranger.goto(f"{url}?token=not-anyones-token-0123456789abcdef")
        assert refused is not None
        assert refused.status == 403
        owner.context.close()
        stranger.context.close()
