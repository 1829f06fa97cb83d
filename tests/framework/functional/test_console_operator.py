"""The console as an operator uses it, in headless Chromium (one browser and one home for
the module): every page passes axe-core at desktop and phone sizes; a step shows what it
was given; a redrive with real retry waits leaves the console answering; the first of two
approvers is told to wait; a waiting case is cancelled and its steps undone; a restarted
console's refusal says how to get back.

Skipped in one line without chromium or axe-core, failed under ``CI=true``."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from stepsaga._project.home import StateHome
from stepsaga._util.clock import SystemClock
from stepsaga.console._serve import running
from tests.framework.functional.cli_support import (
    EXAMPLES,
    case_data,
    cli,
    write_faults,
    write_json,
)
from tests.framework.functional.console_support import (
    DESKTOP,
    PHONE,
    REJECTED,
    TOKEN,
    UNVERIFIABLE,
    axe_script,
    launched_chromium,
    local_config,
    screenshot,
    start_case,
)

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, Dialog, Page

pytestmark = [pytest.mark.browser, pytest.mark.slow]

#: The start's 8 refund attempts are throttled (it fails); its redrive's first two too, so it
#: waits out TRANSIENT_RETRY's real (jittered) delays, and the attempt that succeeds is slow
#: (3 s) so the redrive lasts long enough to watch whatever the jitter drew.
THROTTLED = [
    {"service": "payments", "operation": "refund", "times": 10, "fault": "throttle"},
    {"service": "payments", "operation": "refund", "attempt": 11, "fault": "slow", "seconds": 3},
]
#: A refund whose outcome is unknown: an item under dual control (RefundPayment's rule).
REFUND_UNKNOWN = [
    {"service": "payments", "operation": "refund", "times": 2, "fault": "lose_response"},
    {"service": "payments", "operation": "find_refund_by_key", "times": 2, "fault": "throttle"},
]


@dataclass(frozen=True)
class Home:
    url: str
    compensated: dict[str, Any]
    waiting: dict[str, Any]
    failed: dict[str, Any]
    dual: dict[str, Any]
    #: The project's other saga (a per-item step and a parallel group), one line uncertain.
    per_item: dict[str, Any]
    #: Waits for a decision like ``waiting``; its test cancels it.
    to_cancel: dict[str, Any]


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Home]:
    """One home for the module: compensated, waiting, failed and dual-control cases."""
    folder = tmp_path_factory.mktemp("console")
    home = StateHome(folder / "home")
    compensated = start_case(home, folder, "CASE-1", REJECTED)
    waiting = start_case(home, folder, "CASE-2", UNVERIFIABLE)
    failed = start_case(home, folder, "CASE-3", write_faults(folder, *THROTTLED))
    dual = start_case(home, folder, "CASE-4", write_faults(folder, *REFUND_UNKNOWN))
    to_cancel = start_case(home, folder, "CASE-5", UNVERIFIABLE)
    assert (failed["status"], dual["outcome"]) == ("FAILED", "awaiting_reconciliation")
    case = json.loads((EXAMPLES / "case-multi-warehouse.json").read_text())
    case["approval"]["approved_at"] = SystemClock().now().strftime("%Y-%m-%dT%H:%M:%SZ")
    multi = cli(
        home,
        "start",
        "--saga",
        "multi-warehouse-replacement",
        str(write_json(folder / "multi.json", case)),
        "--faults",
        str(EXAMPLES / "faults-multi-warehouse-line-uncertain.json"),
        "--json",
    )
    assert multi.code == 0, multi.err
    with running(lambda port: local_config(home, port)) as url:
        yield Home(url, compensated, waiting, failed, dual, multi.json(), to_cancel)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with launched_chromium() as launched:
        yield launched


def _signed_in(browser: Browser, home: Home, **options: Any) -> BrowserContext:
    context = browser.new_context(viewport=DESKTOP, **options)
    page = context.new_page()
    page.goto(f"{home.url}?token={TOKEN}")
    page.close()
    return context


@pytest.fixture
def page(browser: Browser, shared: Home) -> Iterator[Page]:
    context = _signed_in(browser, shared)
    opened = context.new_page()
    opened.on("dialog", lambda dialog: dialog.accept())  # the confirmations
    yield opened
    context.close()


def _pages(home: Home) -> list[str]:
    item = home.waiting["open_items"][0]
    return [
        "executions",
        f"executions/{home.compensated['name']}?tenant=acme",
        f"executions/{home.waiting['name']}?tenant=acme",
        f"executions/{home.failed['name']}?tenant=acme",
        f"executions/{home.per_item['name']}?tenant=acme",
        "reconciliation",
        f"reconciliation/{item}",
        "ledger?tenant=acme&case=CASE-1",
        "executions/no-such-execution",
    ]


def test_every_page_has_no_serious_accessibility_violation(browser: Browser, shared: Home) -> None:
    """axe-core (npm, injected as a script: the context bypasses the console's CSP for it
    only) at 1440x900 and 390x844; no page wider than the phone's screen."""
    axe = axe_script()
    context = _signed_in(browser, shared, bypass_csp=True)
    page = context.new_page()
    found: list[str] = []
    for viewport in (DESKTOP, PHONE):
        page.set_viewport_size(viewport)
        for path in _pages(shared):
            page.goto(shared.url + path)
            found += [f"{viewport['width']}px {path}: {v}" for v in _serious(page, axe)]
            if viewport is PHONE and path.startswith("executions/acme-CASE-1"):
                screenshot(page, "execution-phone")
            if viewport is DESKTOP and path.startswith(f"executions/{shared.per_item['name']}"):
                screenshot(page, "execution-per-item")
            width = page.evaluate("document.documentElement.scrollWidth")
            if width > viewport["width"]:
                found.append(f"{viewport['width']}px {path}: the page is {width}px wide")
    context.close()
    assert not found, "\n".join(found)


def _serious(page: Page, axe: Path) -> list[str]:
    """axe-core's serious and critical violations on ``page`` as it stands."""
    page.add_script_tag(path=str(axe))
    result = page.evaluate(
        "async () => (await axe.run(document, {resultTypes: ['violations']})).violations"
        ".map(v => ({id: v.id, impact: v.impact, targets: v.nodes.map(n => n.target)}))"
    )
    return [
        f"{v['id']} ({v['impact']}) {v['targets'][:3]}"
        for v in result
        if v["impact"] in ("serious", "critical")
    ]


def test_a_step_shows_the_input_it_was_given_and_opens_from_the_graph(
    page: Page, shared: Home
) -> None:
    from playwright.sync_api import expect

    page.goto(f"{shared.url}executions/{shared.compensated['name']}?tenant=acme")
    refund = page.locator('details.run[data-state="RefundPayment"]').first
    given = refund.locator("pre.step-input")
    assert not given.is_visible()  # closed until asked for
    # keyboard: the graph's node is a link to the step's details
    node = page.locator('svg#saga-graph a.node-link:has(g[data-state="RefundPayment"])')
    node.focus()
    page.keyboard.press("Enter")
    expect(given).to_be_visible()
    refund_asked = case_data()["refund"]  # what the case asked to refund
    shown = json.loads(given.inner_text())
    assert (shown["amount"], shown["payment_id"]) == (
        refund_asked["amount"],
        refund_asked["payment_id"],
    )
    assert refund.locator("summary").inner_text().count("ms") == 1  # its duration
    assert "acme:CASE-1:r1:refund_payment" in refund.inner_text()  # the action key
    assert "COMPLETED" in refund.inner_text()  # the ledger's status
    # the rejected shipment is "caught", not green like a success
    shipment = page.locator('svg#saga-graph g.node[data-state="CreateShipment"]')
    assert shipment.get_attribute("data-status") == "caught"
    done = page.locator('svg#saga-graph g.node[data-state="ReserveStock"]')
    assert done.get_attribute("data-status") == "succeeded"
    assert page.locator('details.run[data-state="CreateShipment"] .step-error').is_visible()
    page.locator("#case-input summary").click()
    assert '"order_id"' in page.locator("#case-input pre").inner_text()
    # a copy button puts the id itself on the clipboard
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    copy = refund.locator("button.copy").first
    copy.click()
    # The clipboard write resolves asynchronously; the label says so for 1.5 s.
    expect(copy).to_have_text("copied")
    assert page.evaluate("navigator.clipboard.readText()") == "acme:CASE-1:r1:refund_payment"


def test_a_redrive_returns_at_once_and_the_console_keeps_answering(
    browser: Browser, page: Page, shared: Home
) -> None:
    """The redrive waits out a real 3 s retry on the worker; the POST and another
    operator's page each answer in under 2 s meanwhile, and the page follows the
    execution to its end by itself."""
    name = shared.failed["name"]
    page.goto(f"{shared.url}executions/{name}?tenant=acme")
    began = time.monotonic()
    with page.expect_navigation():
        page.click("form[action$='/redrive'] button")
    returned = time.monotonic() - began
    assert returned < 2, returned
    assert page.locator("#job").get_attribute("data-state") in ("queued", "running")

    other = _signed_in(browser, shared)
    listing = other.new_page()
    began = time.monotonic()
    response = listing.goto(f"{shared.url}executions")
    answered = time.monotonic() - began
    assert response is not None
    assert response.status == 200
    assert answered < 2, answered
    assert "action(s) running" in listing.locator("header").inner_text()
    row = listing.locator(f'tr[data-name="{name}"]')
    assert "RUNNING" in row.inner_text()  # the redrive is under way
    loads: list[str] = []
    listing.on("load", lambda _: loads.append("reloaded"))

    assert page.locator("#job").get_attribute("data-state") == "running"  # still waiting
    screenshot(page, "redrive-running")
    page.wait_for_selector("#job[data-state=done]", timeout=30_000)  # no reload asked for
    assert page.locator("#execution-outcome").inner_text() == "completed"
    assert page.locator(".live-status").inner_text().startswith("up to date")
    # the other operator's list caught up in place (it refreshes every 5 s), not reloaded
    from playwright.sync_api import expect

    expect(row).to_contain_text("SUCCEEDED", timeout=15_000)
    assert loads == []
    other.close()


def test_the_first_of_two_approvers_is_told_to_wait(page: Page, shared: Home) -> None:
    item = shared.dual["open_items"][0]
    page.goto(f"{shared.url}reconciliation/{item}")
    assert page.locator("#item-dual-control").is_visible()

    page.check("input[name=outcome][value=not_applied]")
    page.fill("#resolve-note", "the PSP shows no refund")
    confirm = page.locator("input[value=not_applied]").get_attribute("data-confirm") or ""
    assert "second person" in confirm  # says what this click does: a first approval only
    page.click("#resolve-form button[type=submit]")
    page.wait_for_selector("#awaiting-other")
    assert "Waiting for a second person" in page.locator("#awaiting-other").inner_text()
    assert page.locator("#resolve-form").count() == 0  # no form to send again
    page.goto(f"{shared.url}reconciliation?kind=dual")
    assert page.locator("#kind-dual .count").inner_text() == "1"
    assert page.locator("table#items tbody tr").count() == 1


def test_a_waiting_case_is_cancelled_from_its_page_and_its_steps_undone(
    browser: Browser, shared: Home
) -> None:
    """The confirm says what cancel does; the POST returns at once and the page follows the
    job until the undone steps show; axe-core finds nothing serious on the result at either
    size, and it fits the phone."""
    from playwright.sync_api import expect

    axe = axe_script()
    context = _signed_in(browser, shared, bypass_csp=True)  # for axe's script only
    page = context.new_page()
    asked: list[str] = []

    def confirm(dialog: Dialog) -> None:
        asked.append(dialog.message)
        dialog.accept()

    page.on("dialog", confirm)
    name = shared.to_cancel["name"]
    page.goto(f"{shared.url}executions/{name}?tenant=acme")
    page.get_by_label("Why cancel it").fill("customer cancelled")
    with page.expect_navigation():
        page.get_by_role("button", name="Cancel and undo").click()
    assert len(asked) == 1
    assert "undone, last step first, with the saga's own compensations" in asked[0]

    page.wait_for_selector("#job[data-state=done]", timeout=30_000)
    expect(page.locator("#execution-outcome")).to_have_text("stopped")
    undone = page.locator("#undone li.undone")
    assert [
        (li.get_attribute("data-step"), li.get_attribute("data-kind")) for li in undone.all()
    ] == [("RefundPayment", "escalated"), ("ReserveStock", "compensated")]
    compensated = page.locator('#undone li[data-kind="compensated"]')
    assert "acme:CASE-5:r1:reserve_stock:compensate" in compensated.inner_text()
    assert page.locator("form[action$='/stop']").count() == 0
    assert page.get_by_role("button", name="Cancel again").is_visible()  # retries, if need be
    screenshot(page, "execution-cancelled")
    assert _serious(page, axe) == []
    page.set_viewport_size(PHONE)
    page.reload()
    assert _serious(page, axe) == []
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    context.close()


def test_after_a_restart_the_refusal_says_how_to_get_back(browser: Browser, shared: Home) -> None:
    context = browser.new_context(viewport=PHONE)
    stranger = context.new_page()
    response = stranger.goto(f"{shared.url}executions")
    assert response is not None
    assert response.status == 403
    assert stranger.locator("h1").inner_text() == "Open the console's URL again"
    assert "--token-file" in stranger.locator("main").inner_text()
    header = stranger.locator("header.top")
    assert header.evaluate("h => getComputedStyle(h).backgroundColor") == "rgb(26, 32, 44)"
    context.close()
