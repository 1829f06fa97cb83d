"""The console in a real headless Chromium (Debian's package, ``make browser``): the
operator's scenarios, each saving a screenshot of its page into ``build/screenshots/``
(``$STEPSAGA_SCREENSHOTS``; ``make screenshots`` writes the README's, ``docs/console/``).
Skipped in one line without chromium, failed under ``CI=true``."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

import boto3
import pytest

from stepsaga._project.home import StateHome
from stepsaga.console._serve import running
from stepsaga.ledger import open_ledger
from stepsaga.ledger._connect import open_store
from stepsaga.ledger._models import ReconStatus
from tests.framework.functional.aws_support import fake_aws, run_locally
from tests.framework.functional.cli_support import case_data, write_case
from tests.framework.functional.console_support import (
    TOKEN,
    UNVERIFIABLE,
    Cases,
    aws_config,
    launched_chromium,
    local_config,
    run_cases,
    screenshot,
)
from workflows.case import parse_case

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Dialog, Page

pytestmark = [pytest.mark.browser, pytest.mark.slow]

HOSTILE = "<script>alert(1)</script>"


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with launched_chromium() as launched:
        yield launched


@pytest.fixture
def cases(home: StateHome, tmp_path: Path) -> Cases:
    return run_cases(home, tmp_path)


@pytest.fixture
def console(home: StateHome) -> Iterator[str]:
    with running(lambda port: local_config(home, port)) as url:
        yield url


@pytest.fixture
def page(browser: Browser, console: str) -> Iterator[Page]:
    """A page logged in the way a person is: by opening the printed URL once."""
    context = browser.new_context(viewport={"width": 1360, "height": 900})
    opened = context.new_page()
    opened.on("dialog", lambda dialog: dialog.accept())  # the confirmations
    opened.goto(f"{console}?token={TOKEN}")
    yield opened
    context.close()


def test_1_open_the_list(page: Page, console: str, cases: Cases) -> None:
    page.goto(f"{console}executions")
    assert "token" not in page.url  # the login redirect dropped it from the address bar
    rows = page.locator("table#executions tbody tr")
    assert sorted(rows.evaluate_all("rows => rows.map(r => r.dataset.name)")) == [
        cases.compensated["name"],
        cases.waiting["name"],
    ]
    screenshot(page, "executions")
    page.select_option("select[name=outcome]", "compensated")
    page.click("form.filters button")
    assert page.locator("table#executions tbody tr").count() == 1
    page.click(f"text={cases.compensated['name']}")
    assert page.locator("h1#execution-name").inner_text() == cases.compensated["name"]


def test_2_a_compensated_execution_shows_its_path(page: Page, console: str, cases: Cases) -> None:
    page.goto(f"{console}executions/{cases.compensated['name']}?tenant=acme")
    assert page.locator("#execution-outcome").inner_text() == "compensated"
    # The refusal's reason, as ``status`` prints it (test_cli_refusal_reason.py).
    reason = page.locator("#execution-reason").inner_text()
    assert reason.startswith("CreateShipment: BusinessRejectedError: shipping.create_shipment: ")
    visited = page.locator("svg#saga-graph g.node.visited")
    names = visited.evaluate_all("nodes => nodes.map(n => n.dataset.state)")
    assert {"CreateShipment", "EscalateRefundPayment", "ReleaseReservation", "Compensated"} <= set(
        names
    )
    assert "CompensationFailed" not in names
    strokes = {
        state: page.locator(f'svg#saga-graph g.node[data-state="{state}"] rect').evaluate(
            "r => getComputedStyle(r).stroke"
        )
        for state in ["ReserveStock", "CreateShipment", "EscalateRefundPayment", "Compensated"]
    }
    # succeeded, caught (the rejection), compensation ran, and not visited: four looks
    assert (
        len({strokes[s] for s in ["ReserveStock", "CreateShipment", "EscalateRefundPayment"]}) == 3
    )
    other = page.locator('svg#saga-graph g.node[data-state="CompensationFailed"] rect')
    assert other.evaluate("r => getComputedStyle(r).stroke") not in strokes.values()
    taken = page.locator('svg#saga-graph g.edge.taken[data-source="CreateShipment"]')
    assert taken.get_attribute("data-target") == "EscalateRefundPayment"
    assert "caught → EscalateRefundPayment" in page.locator("#timeline").inner_text()
    screenshot(page, "execution")


def test_3_resolve_a_waiting_item_and_see_the_case_complete(
    page: Page, console: str, cases: Cases
) -> None:
    item = cases.waiting["open_items"][0]
    page.goto(f"{console}reconciliation")
    screenshot(page, "reconciliation")
    page.click(f"a[href='/reconciliation/{item}']")
    operator = page.locator("#operator").inner_text()
    assert "@" in operator  # the local backend's identity: user@host
    page.check("input[name=outcome][value=applied]")
    page.fill("textarea[name=note]", "carrier confirmed the parcel left the warehouse")
    screenshot(page, "resolve")
    page.click("#resolve-form button[type=submit]")  # the confirmation is accepted
    page.wait_for_selector("#continuation")
    assert page.locator("#item-status").inner_text().startswith("RESOLVED")
    assert page.locator("#item-resolved-by").inner_text() == operator
    assert page.locator("#continuation-outcome").inner_text() == "completed"
    screenshot(page, "resolved")
    page.click(f"#continuation a:has-text('{cases.waiting['name']}')")
    assert page.locator("#execution-outcome").inner_text() == "completed"
    page.goto(f"{console}ledger?tenant=acme&case=CASE-2")
    assert page.locator("table#records tbody tr").count() >= 3
    screenshot(page, "ledger")


def test_4_a_request_without_the_token_is_refused(browser: Browser, console: str) -> None:
    context = browser.new_context()
    stranger = context.new_page()
    for path in ["executions", "reconciliation", "ledger"]:  # (static files are public)
        response = stranger.goto(console + path)
        assert response is not None
        assert response.status == 403
    assert "token" in stranger.locator("body").inner_text()
    wrong = stranger.goto(f"{console}executions?token=guess")
    assert wrong is not None
    assert wrong.status == 403
    context.close()


class _AttackerPage(BaseHTTPRequestHandler):
    """Another site on this machine: a page whose form posts to the console."""

    target = ""

    def do_GET(self) -> None:
        body = (
            "<!doctype html><title>win a prize</title>"
            f'<form id="f" method="post" action="{self.target}">'
            '<input name="outcome" value="not_applied"><input name="note" value="pwned">'
            '<button id="go">claim</button></form>'
        ).encode()
        self.send_response(200)
        self.send_header("content-type", "text/html")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def attacker() -> Iterator[tuple[ThreadingHTTPServer, str]]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _AttackerPage)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server, f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def test_5_a_cross_site_post_is_refused(
    page: Page,
    console: str,
    cases: Cases,
    home: StateHome,
    attacker: tuple[ThreadingHTTPServer, str],
) -> None:
    item = cases.waiting["open_items"][0]
    _AttackerPage.target = f"{console}reconciliation/{item}/resolve"
    page.goto(attacker[1])  # same browser, logged in to the console (cookie set)
    with page.expect_navigation():
        page.click("#go")
    assert "403" in page.locator("body").inner_text()
    with open_ledger(home.ledger_url) as ledger:
        stored = ledger.get_item(item)
    assert stored is not None
    assert stored.status is ReconStatus.OPEN
    assert stored.note is None


def _plant_hostile_case(home: StateHome) -> str:
    """A record and an item whose ids, reason, evidence and note are markup, written past
    every validation (as a compromised writer could): the console must show them as text."""
    with open_ledger(home.ledger_url) as ledger:
        record = ledger.list(tenant="acme", case="CASE-1")[0]
        item = ledger.list_items(tenant="acme")[0]
    store = open_store(home.ledger_url)
    key = f"{HOSTILE}:{HOSTILE}:r1:{record.operation}"
    store.put(replace(record, key=key, tenant_id=HOSTILE, case_id=HOSTILE), expect=None)
    hostile_item = replace(
        item,
        item_id="rec-hostile",
        record_key=key,
        tenant_id=HOSTILE,
        case_id=HOSTILE,
        reason=f"reason {HOSTILE}",
        evidence={"html": '<img src=x onerror="alert(2)">', HOSTILE: HOSTILE},
        note=None,
        task_token=None,
    )
    store.put_item(hostile_item, expect=None)
    store.close()
    return hostile_item.item_id


def test_6_a_case_whose_ids_contain_script_renders_inert(
    page: Page, console: str, cases: Cases, home: StateHome
) -> None:
    item = _plant_hostile_case(home)
    dialogs: list[str] = []

    def record(dialog: Dialog) -> None:
        dialogs.append(dialog.message)

    page.on("dialog", record)
    for path in ["reconciliation", f"reconciliation/{item}", "ledger"]:
        page.goto(console + path)
        page.wait_for_load_state("load")
        assert HOSTILE in page.locator("main").inner_text()
        assert page.locator("script").count() == 1  # console.js, nothing injected
        assert page.locator("main img").count() == 0
    screenshot(page, "hostile")
    assert dialogs == []


def test_the_same_pages_on_aws_moto(browser: Browser, home: StateHome, tmp_path: Path) -> None:
    """``--backend aws`` on moto (no Lambda runs there: the ledger of a local run, an
    execution RUNNING on Step Functions); the form's identity is the caller's IAM ARN."""
    local_run = run_locally(home, write_case(tmp_path), UNVERIFIABLE)
    with fake_aws() as aws:
        aws.copy_ledger(local_run.records, [replace(i, task_token=None) for i in local_run.items])
        view = aws.backend().start(parse_case(case_data()))
        identity = boto3.client("sts", region_name="us-east-1").get_caller_identity()["Arn"]
        with running(lambda port: aws_config(aws, port)) as url:
            context = browser.new_context(viewport={"width": 1360, "height": 900})
            page = context.new_page()
            page.on("dialog", lambda dialog: dialog.accept())
            page.goto(f"{url}executions?token={TOKEN}")
            assert page.locator("header .backend").inner_text() == "backend: aws"
            page.click(f"text={view.name}")
            assert page.locator("#execution-status").inner_text() == "RUNNING"
            item = local_run.items[0].item_id
            page.goto(f"{url}reconciliation/{item}")
            assert page.locator("#operator").inner_text() == identity
            page.check("input[name=outcome][value=not_applied]")
            page.fill("textarea[name=note]", "no parcel at the carrier")
            page.click("#resolve-form button[type=submit]")
            page.wait_for_selector("#item-resolved-by")
            assert page.locator("#item-resolved-by").inner_text() == identity
            screenshot(page, "aws-resolved")
            context.close()
