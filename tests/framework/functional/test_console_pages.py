"""The console's pages over both backends: what each page shows comes from the backend the
CLI uses (status, history, recon, ledger), and resolving goes through ``recon_resolve``
with the backend's own operator identity."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from starlette.testclient import TestClient

from stepsaga._project.home import StateHome
from stepsaga.console._security import csrf_token
from stepsaga.ledger._models import ReconStatus
from tests.framework.functional.aws_support import FakeAws, fake_aws, run_locally
from tests.framework.functional.cli_support import (
    EXAMPLES,
    case_data,
    cli,
    effects,
    write_case,
    write_faults,
)
from tests.framework.functional.console_support import (
    TOKEN,
    UNVERIFIABLE,
    Cases,
    aws_config,
    client,
    local_config,
    run_cases,
)
from workflows.case import parse_case


@pytest.fixture
def cases(home: StateHome, tmp_path: Path) -> Cases:
    return run_cases(home, tmp_path)


@pytest.fixture
def local(home: StateHome) -> TestClient:
    return client(local_config(home))


def _visited(html: str) -> set[str]:
    return set(re.findall(r'data-state="([^"]+)" data-visited="true"', html))


def _taken(html: str) -> set[tuple[str, str]]:
    found = re.findall(r'data-source="([^"]+)" data-target="([^"]+)" data-taken="true"', html)
    return set(found)


def test_a_compensated_execution_shows_its_path_ledger_and_timeline(
    local: TestClient, cases: Cases
) -> None:
    page = local.get(f"/executions/{cases.compensated['name']}?tenant=acme")
    assert page.status_code == 200
    html = page.text
    assert _visited(html) == {
        "ReserveStock",
        "RefundPayment",
        "CreateShipment",
        "EscalateRefundPayment",
        "ReleaseReservation",
        "Compensated",
    }
    assert ("CreateShipment", "EscalateRefundPayment") in _taken(html)
    assert ("CreateShipment", "ReconcileCreateShipment") not in _taken(html)
    assert 'class="badge outcome-compensated">compensated' in html
    # the ledger records of the revision, with their digests
    for step in cases.compensated["steps"]:
        if step["ledger_status"]:
            assert step["action_key"] in html
    assert re.search(r'title="[0-9a-f]{64}"', html)
    # the catch, in the timeline
    assert "caught → <b>EscalateRefundPayment</b>" in html


def test_the_queue_marks_overdue_items_and_shows_evidence(home: StateHome, cases: Cases) -> None:
    fresh = client(local_config(home)).get("/reconciliation").text
    item = cases.waiting["open_items"][0]
    assert item in fresh
    assert "overdue</span>" not in fresh
    stale = client(replace(local_config(home), overdue_after=timedelta(0)))
    html = stale.get("/reconciliation").text
    assert 'class="overdue"' in html
    assert "overdue</span>" in html
    assert "case waits" in html
    assert '<pre tabindex="0">{' in html  # the evidence, as JSON


def test_resolving_a_waiting_item_continues_the_case(local: TestClient, cases: Cases) -> None:
    item = cases.waiting["open_items"][0]
    form = local.get(f"/reconciliation/{item}").text
    operator = re.search(r'id="operator">([^<]+)<', form)
    assert operator is not None
    assert "@" in operator.group(1)
    done = local.post(
        f"/reconciliation/{item}/resolve",
        data={"csrf": csrf_token(TOKEN), "outcome": "applied", "note": "carrier confirmed"},
    )
    assert done.status_code == 200
    assert f'id="item-resolved-by">{operator.group(1)}<' in done.text
    assert 'id="continuation-outcome"><span class="badge outcome-completed">completed' in done.text
    status = local.get(f"/executions/{cases.waiting['name']}?tenant=acme").text
    assert 'class="badge outcome-completed">completed' in status


def test_a_bad_resolution_is_one_line_and_changes_nothing(
    local: TestClient, cases: Cases, home: StateHome
) -> None:
    item = cases.waiting["open_items"][0]
    for data, message in [
        ({"outcome": "maybe", "note": "checked the carrier"}, "Outcome: choose applied or not"),
        ({"outcome": "applied", "note": "  "}, "Note: say what you checked"),
    ]:
        response = local.post(
            f"/reconciliation/{item}/resolve", data={"csrf": csrf_token(TOKEN), **data}
        )
        assert response.status_code == 400
        # on the form it came from, in the page's words, with what was typed kept
        error = re.search(r'id="form-error">([^<]+)<', response.text)
        assert error is not None
        assert error.group(1).startswith(message)
        assert 'id="resolve-form"' in response.text
        assert f">{data['note'].strip()}</textarea>" in response.text
    listed = cli(home, "recon", "list", "--case", "CASE-2", "--json").json()["items"]
    assert [i["status"] for i in listed] == [ReconStatus.OPEN.value]


def test_the_ledger_page_shows_a_case_or_a_tenant(local: TestClient, cases: Cases) -> None:
    case_page = local.get("/ledger?tenant=acme&case=CASE-1").text
    assert "acme:CASE-1:r1:reserve_stock" in case_page
    assert "acme:CASE-2:" not in case_page
    tenant_page = local.get("/ledger?tenant=acme").text
    assert "acme:CASE-1:r1:reserve_stock" in tenant_page
    assert "acme:CASE-2:r1:reserve_stock" in tenant_page
    assert "no ledger records for this filter" in local.get("/ledger?tenant=other").text


def test_an_unknown_execution_or_item_is_a_404_page(local: TestClient, cases: Cases) -> None:
    assert local.get("/executions/nope").status_code == 404
    assert local.get("/reconciliation/rec-nope").status_code == 404
    assert local.get("/reconciliation?status=weird").status_code == 400


def test_an_empty_home_shows_empty_pages_and_writes_nothing(
    local: TestClient, home: StateHome
) -> None:
    for path in ["/reconciliation", "/ledger"]:
        assert local.get(path).status_code == 200
    assert not home.root.exists()


# --- the same pages on --backend aws (moto) ---------------------------------------------


@pytest.fixture
def aws() -> Iterator[FakeAws]:
    with fake_aws() as fake:
        yield fake


def test_the_pages_work_on_aws_with_the_callers_iam_identity(
    aws: FakeAws, home: StateHome, tmp_path: Path
) -> None:
    local_run = run_locally(home, write_case(tmp_path), UNVERIFIABLE)
    # moto runs no Lambda: the ledger of a local run, an execution that is RUNNING on AWS,
    # and no task token (nothing on moto waits for one).
    aws.copy_ledger(local_run.records, [replace(i, task_token=None) for i in local_run.items])
    view = aws.backend().start(parse_case(case_data()))
    console = client(aws_config(aws))
    assert _names(console.get("/executions?tenant=acme").text) == [view.name]
    page = console.get(f"/executions/{view.name}")
    assert page.status_code == 200, page.text
    assert "backend: <b>aws</b>" in page.text
    assert _visited(page.text) == set()  # moto's execution has entered no state
    assert "acme:CASE-1001:r1:reserve_stock" in page.text
    item = local_run.items[0].item_id
    assert item in console.get("/reconciliation").text
    form = console.get(f"/reconciliation/{item}").text
    identity = boto3.client("sts", region_name="us-east-1").get_caller_identity()["Arn"]
    assert f'id="operator">{identity}<' in form
    done = console.post(
        f"/reconciliation/{item}/resolve",
        data={"csrf": csrf_token(TOKEN), "outcome": "not_applied", "note": "no parcel"},
    )
    assert done.status_code == 200, done.text
    assert f'id="item-resolved-by">{identity}<' in done.text
    assert aws.ledger().get_item(item).resolved_by == identity  # type: ignore[union-attr]
    assert "acme:CASE-1001:r1:reserve_stock" in console.get("/ledger?tenant=acme").text


def test_a_cancel_on_aws_shows_each_undo_that_failed_and_why(
    aws: FakeAws, home: StateHome, tmp_path: Path
) -> None:
    """On moto the saga's functions are not deployed: each undo fails (``cancel`` exits 1 on
    the CLI) and the page says so, step by step, and offers the cancel again."""
    local_run = run_locally(home, write_case(tmp_path), UNVERIFIABLE)
    aws.copy_ledger(local_run.records, [replace(i, task_token=None) for i in local_run.items])
    view = aws.backend().start(parse_case(case_data()))
    console = client(aws_config(aws))
    assert (
        f'action="/executions/{view.name}/cancel"' in console.get(f"/executions/{view.name}").text
    )

    done = _post(console, view.name, "cancel", "customer cancelled")

    assert done.status_code == 200, done.text
    assert 'id="job" role="status" data-state="done"' in done.text
    assert _undone(done.text) == [("RefundPayment", "failed"), ("ReserveStock", "failed")]
    assert 'id="cancel-incomplete"' in done.text
    assert "InvokeFunction" in done.text  # the failure, as the backend worded it
    with aws.backend() as backend:
        assert backend.status(view.name).status == "ABORTED"


def test_retries_show_the_delay_the_engine_chose(
    local: TestClient, home: StateHome, tmp_path: Path
) -> None:
    throttled = EXAMPLES / "faults-throttled-refund.json"
    started = cli(
        home, "start", str(write_case(tmp_path, "CASE-9")), "--faults", str(throttled), "--json"
    )
    assert started.code == 0, started.err
    html = local.get(f"/executions/{started.json()['name']}").text
    chosen = [float(s) for s in re.findall(r"retry \d+ after ([\d.]+) s \(delay chosen\)", html)]
    assert chosen, html
    assert all(seconds > 0 for seconds in chosen)  # chosen, though time scale 0 waited none


def test_a_failed_execution_is_redriven_from_its_page(
    local: TestClient, home: StateHome, tmp_path: Path
) -> None:
    throttled = write_faults(
        tmp_path, {"service": "payments", "operation": "refund", "times": 8, "fault": "throttle"}
    )
    started = cli(
        home, "start", str(write_case(tmp_path, "CASE-R")), "--faults", str(throttled), "--json"
    )
    assert started.json()["outcome"] == "failed"
    name = started.json()["name"]
    page = local.get(f"/executions/{name}").text
    assert f'action="/executions/{name}/redrive"' in page
    assert "failed with <code>TransientError</code> (not caught)" in page
    done = local.post(
        f"/executions/{name}/redrive", data={"csrf": csrf_token(TOKEN), "tenant": "acme"}
    )
    assert done.status_code == 200
    assert str(done.url).endswith(f"/executions/{name}?tenant=acme")
    assert 'class="badge outcome-completed">completed' in done.text
    assert "<b>redriven</b> (redrive 1)" in done.text
    assert f'action="/executions/{name}/redrive"' not in done.text  # SUCCEEDED: no button


def _names(html: str) -> list[str]:
    return re.findall(r'<tr data-name="([^"]+)">', html)


def test_the_list_filters_and_pages_through_list_executions(home: StateHome, cases: Cases) -> None:
    paged = client(replace(local_config(home), page_size=1))
    first = paged.get("/executions").text
    assert _names(first) == [cases.waiting["name"]]  # newest first
    found = re.search(r'<a href="([^"]+)" id="next-page">', first)
    assert found is not None
    second = paged.get(found.group(1).replace("&amp;", "&")).text
    assert _names(second) == [cases.compensated["name"]]
    back = re.search(r'<a href="([^"]+)" id="prev-page">', second)
    assert back is not None
    assert _names(paged.get(back.group(1).replace("&amp;", "&")).text) == [cases.waiting["name"]]
    everything = client(local_config(home))
    assert _names(everything.get("/executions?outcome=compensated").text) == [
        cases.compensated["name"]
    ]
    assert _names(everything.get("/executions?tenant=acme&status=RUNNING").text) == [
        cases.waiting["name"]
    ]
    assert "no executions for this filter" in everything.get("/executions?tenant=other").text


def test_a_bad_filter_is_one_line_naming_it(local: TestClient, cases: Cases) -> None:
    response = local.get("/executions?since=yesterday")
    assert response.status_code == 400
    message = re.search(r'id="error-message">([^<]+)<', response.text)
    assert message is not None
    assert "since" in message.group(1)


def test_a_running_execution_is_stopped_from_its_page_as_the_operator(
    local: TestClient, cases: Cases
) -> None:
    name = cases.waiting["name"]
    page = local.get(f"/executions/{name}").text
    assert f'action="/executions/{name}/stop"' in page
    operator = re.search(r'<span class="dim">as ([^<]+)</span>', page)
    assert operator is not None
    done = _post(local, name, "stop", "customer cancelled")
    assert done.status_code == 200, done.text
    assert str(done.url).endswith(f"/executions/{name}?tenant=acme")
    assert 'class="badge outcome-stopped">stopped' in done.text
    assert operator.group(1) in done.text  # the stop's cause names who stopped it
    assert f'action="/executions/{name}/stop"' not in done.text
    assert f'action="/executions/{name}/redrive"' not in done.text  # never redriven


def test_stopping_without_the_csrf_field_is_refused(local: TestClient, cases: Cases) -> None:
    name = cases.waiting["name"]
    response = local.post(f"/executions/{name}/stop", data={"note": "x"})
    assert response.status_code == 403
    assert "RUNNING" in local.get(f"/executions/{name}").text


def _post(client: TestClient, name: str, verb: str, note: str) -> Any:
    """The execution page's ``verb`` form (stop, cancel) sent with ``note`` (the client's
    response: httpx's, or httpx2's where Starlette found that)."""
    data = {"csrf": csrf_token(TOKEN), "tenant": "acme", "note": note}
    return client.post(f"/executions/{name}/{verb}", data=data)


def _undone(html: str) -> list[tuple[str, str]]:
    return re.findall(r'<li class="undone" data-step="([^"]+)" data-kind="([^"]+)">', html)


def test_a_waiting_execution_is_cancelled_from_its_page_and_shows_what_was_undone(
    local: TestClient, cases: Cases, home: StateHome
) -> None:
    name = cases.waiting["name"]  # reserved, refunded, the shipment uncertain
    page = local.get(f"/executions/{name}").text
    assert f'action="/executions/{name}/cancel"' in page
    assert '<label for="cancel-note">Why cancel it</label>' in page
    confirm = re.search(r'id="cancel-form" data-confirm="([^"]+)"', page)
    assert confirm is not None
    question = html.unescape(confirm.group(1))  # says exactly what happens, unlike stop
    assert "completed steps are undone, last step first, with the saga's own" in question
    assert "cannot be undone goes to a person as an escalation" in question
    assert "Stop, which only freezes" in question
    assert effects(home, "CASE-2")["release"] == 0

    done = _post(local, name, "cancel", "customer cancelled")

    assert done.status_code == 200, done.text
    assert str(done.url).endswith(f"/executions/{name}?tenant=acme")
    assert 'class="badge outcome-stopped">stopped' in done.text
    assert _undone(done.text) == [("RefundPayment", "escalated"), ("ReserveStock", "compensated")]
    assert effects(home, "CASE-2")["release"] == 1  # the saga's own compensation ran, once
    refund_item = cli(home, "recon", "list", "--case", "CASE-2", "--json").json()["items"]
    escalated = [i["id"] for i in refund_item if i["step"] == "RefundPayment"]
    assert f'href="/reconciliation/{escalated[0]}"' in done.text  # the person's item
    by = re.search(
        r'data-step="ReserveStock" data-kind="compensated">.*?by <span[^>]*>([^<]+)<',
        done.text,
        re.S,
    )
    assert by is not None
    assert by.group(1) == "acme:CASE-2:r1:reserve_stock:compensate:release_reservation"
    assert f'action="/executions/{name}/stop"' not in done.text  # stopped: nothing to freeze
    assert ">Cancel again</button>" in done.text  # a failed undo would be retried
    assert f'action="/executions/{name}/redrive"' not in done.text


def test_a_refused_cancel_shows_on_its_form_with_the_note_kept(
    local: TestClient, cases: Cases, home: StateHome
) -> None:
    name = cases.waiting["name"]
    for note, message, code in [
        ("  ", "Note: say why you cancel it.", 400),  # the page's own check
        ("x" * 1001, "Note: at most 1000 characters", 400),  # the backend's, in web words
    ]:
        response = _post(local, name, "cancel", note)
        assert response.status_code == code
        error = re.search(r'id="form-error">([^<]+)<', response.text)
        assert error is not None
        assert error.group(1) == message
        kept = re.search(
            r'id="cancel-note" name="note" required size="30" value="([^"]*)"', response.text
        )
        assert kept is not None
        assert kept.group(1) == note.strip()
        assert re.search(r'id="stop-note" name="note" required size="30" value=""', response.text)
    assert "RUNNING" in local.get(f"/executions/{name}").text
    assert effects(home, "CASE-2")["release"] == 0
    # an execution that ended on its own has nothing to cancel: no form, and the backend's no
    ended = cases.compensated["name"]
    assert f'action="/executions/{ended}/cancel"' not in local.get(f"/executions/{ended}").text
    refused = _post(local, ended, "cancel", "customer cancelled")
    assert refused.status_code == 400
    assert "there is nothing to cancel" in refused.text


def test_cancelling_without_the_csrf_field_is_refused(
    local: TestClient, cases: Cases, home: StateHome
) -> None:
    name = cases.waiting["name"]
    response = local.post(f"/executions/{name}/cancel", data={"note": "customer cancelled"})
    assert response.status_code == 403
    assert "RUNNING" in local.get(f"/executions/{name}").text
    assert effects(home, "CASE-2")["release"] == 0


def test_a_stopped_execution_can_be_cancelled_until_a_later_revision_supersedes_it(
    local: TestClient, cases: Cases, home: StateHome, tmp_path: Path
) -> None:
    name = cases.waiting["name"]
    stopped = _post(local, name, "stop", "fraud check").text
    assert 'class="badge outcome-stopped">stopped' in stopped
    assert f'action="/executions/{name}/cancel"' in stopped  # cancel undoes what stop left
    assert ">Cancel and undo</button>" in stopped
    assert re.search(r'<span class="dim">as [^<]+@[^<]+</span>', stopped)  # who would cancel
    second = write_case(
        tmp_path, "CASE-2", approval={**case_data("CASE-2")["approval"], "revision": 2}
    )
    started = cli(home, "start", str(second), "--json")
    assert started.code == 0, started.err
    page = local.get(f"/executions/{name}?tenant=acme").text
    assert f'action="/executions/{name}/cancel"' not in page
    later = started.json()["name"]
    assert f'id="superseded-by"><a href="/executions/{later}?tenant=acme">{later}</a>' in page


def test_a_refund_item_shows_its_first_approval_and_then_its_audit_record(
    local: TestClient, home: StateHome, tmp_path: Path
) -> None:
    """``RefundPayment`` is under dual control: the console's first not-applied leaves the
    item open, awaiting a second approver; the same operator again is refused (409)."""
    faults = write_faults(
        tmp_path,
        {"service": "payments", "operation": "refund", "times": 2, "fault": "lose_response"},
        {"service": "payments", "operation": "find_refund_by_key", "times": 2, "fault": "throttle"},
    )
    case = write_case(tmp_path, "CASE-9")
    view = cli(home, "start", str(case), "--faults", str(faults), "--json").json()
    item = view["open_items"][0]
    page = local.get(f"/reconciliation/{item}").text
    assert 'id="item-dual-control"' in page
    operator = re.search(r'id="operator">([^<]+)<', page)
    assert operator is not None
    form = {"csrf": csrf_token(TOKEN), "outcome": "not_applied", "note": "PSP shows nothing"}

    first = local.post(f"/reconciliation/{item}/resolve", data=form)

    assert first.status_code == 200
    assert 'id="awaiting-second"' in first.text
    assert f"by {operator.group(1)} at" in first.text
    again = local.post(f"/reconciliation/{item}/resolve", data=form)
    assert again.status_code == 409
    assert "needs a second approver" in again.text
    second = cli(
        home,
        "recon",
        "resolve",
        item,
        "--outcome",
        "not-applied",
        "--by",
        "second@acme.example",
        "--note",
        "confirmed",
    )
    assert second.code == 0, second.err
    done = local.get(f"/reconciliation/{item}").text
    assert 'id="audit"' in done
    deciders = re.findall(r'class="audit-decider">([^<]+)<', done)
    assert [d.split(" at ")[0] for d in deciders] == [operator.group(1), "second@acme.example"]
    assert 'id="awaiting-second"' not in done


def test_navigation_search_tenants_and_links_both_ways(local: TestClient, cases: Cases) -> None:
    """A case id, an execution name or an item id finds its page; a tenant typed in
    another case finds the known tenant; item -> execution -> item links."""
    item = cases.waiting["open_items"][0]
    for query, lands in [
        ("CASE-2", f"/executions/{cases.waiting['name']}?tenant=acme"),
        (cases.compensated["name"], f"/executions/{cases.compensated['name']}?tenant=acme"),
        (item, f"/reconciliation/{item}"),
    ]:
        found = local.get(f"/search?q={query}", follow_redirects=False)
        assert (found.status_code, found.headers["location"]) == (303, lands)
    missing = local.get("/search?q=ORD-nothing")
    assert missing.status_code == 404
    assert "Nothing found for" in missing.text

    shouted = local.get("/executions?tenant=ACME").text
    assert sorted(_names(shouted)) == sorted([cases.compensated["name"], cases.waiting["name"]])
    assert '<option value="acme">' in shouted  # the tenant picker's choices

    item_page = local.get(f"/reconciliation/{item}").text
    assert 'id="item-execution" href="/executions/CASE-2?tenant=acme"' in item_page
    execution = local.get("/executions/CASE-2?tenant=acme").text
    assert f'href="/reconciliation/{item}"' in execution
    assert 'href="/ledger?tenant=acme&amp;case=CASE-2"' in execution
    ledger = local.get("/ledger?tenant=acme&case=CASE-2").text
    assert 'href="/executions/CASE-2?tenant=acme"' in ledger
    assert 'href="/reconciliation?status=all&amp;tenant=acme&amp;case=CASE-2"' in ledger


def test_the_queue_counts_and_filters_each_kind_of_item(local: TestClient, cases: Cases) -> None:
    queue = local.get("/reconciliation").text
    counts = dict(re.findall(r'id="kind-(\w+)"[^>]*>[^<]*<span class="count">(\d+)<', queue))
    # CASE-2's case waits on its item; CASE-1's refund was escalated (nothing waits)
    assert counts == {"waits": "1", "escalations": "1", "dual": "0"}
    waits = local.get("/reconciliation?kind=waits").text
    assert re.findall(r'data-item="([^"]+)"', waits) == cases.waiting["open_items"]
    assert local.get("/reconciliation?kind=weird").status_code == 400
