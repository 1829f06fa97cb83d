"""The console on a test home (local backend) or on moto (AWS backend), and the cases the
console tests look at: one compensated, one waiting for an operator."""

from __future__ import annotations

import dataclasses
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from starlette.testclient import TestClient

from stepsaga._project.home import StateHome
from stepsaga.backends._local import LocalBackend
from stepsaga.cli._common import BackendKind, CliContext
from stepsaga.cli._ledger import ledger_of
from stepsaga.console import ConsoleConfig, create_app
from tests.framework.functional.aws_support import FakeAws
from tests.framework.functional.cli_support import EXAMPLES, ROOT, cli, write_case
from workflows.project import reference_project

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page, ViewportSize

TOKEN = "test-token-0123456789abcdef"
REJECTED = EXAMPLES / "faults-shipment-rejected.json"
UNVERIFIABLE = EXAMPLES / "faults-shipment-unverifiable.json"
#: The two viewports the browser tests check pages at (#27: a laptop and a phone).
DESKTOP: ViewportSize = {"width": 1440, "height": 900}
PHONE: ViewportSize = {"width": 390, "height": 844}


def start_case(home: StateHome, folder: Path, case: str, faults: Path) -> dict[str, Any]:
    """``stepsaga start`` of case ``case`` under ``faults``: what ``--json`` printed."""
    result = cli(home, "start", str(write_case(folder, case)), "--faults", str(faults), "--json")
    assert result.code == 0, result.err
    data: dict[str, Any] = result.json()
    return data


def local_config(home: StateHome, port: int = 8765) -> ConsoleConfig:
    """What ``stepsaga console`` serves for ``home``: the CLI's own openers."""
    project = reference_project()
    cli_context = CliContext(BackendKind.local, home)
    return ConsoleConfig(
        project=project,
        open_backend=lambda: LocalBackend(home, project),
        open_ledger=lambda: ledger_of(cli_context),
        token=TOKEN,
        port=port,
    )


def aws_config(aws: FakeAws, port: int = 8765) -> ConsoleConfig:
    """The console on the moto deployment (``--backend aws``)."""
    return ConsoleConfig(
        project=reference_project(),
        open_backend=aws.backend,
        open_ledger=aws.ledger,
        token=TOKEN,
        port=port,
        backend_name="aws",
    )


def client(config: ConsoleConfig) -> TestClient:
    """A logged-in client (the token cookie set as the browser would get it). Its POSTs
    wait for their action to settle (``action_wait``), so a test reads the page after it;
    the browser tests keep the default and check the POST returns at once."""
    made = TestClient(
        create_app(dataclasses.replace(config, action_wait=60.0)), base_url="http://127.0.0.1"
    )
    made.cookies.set(f"stepsaga_console_{config.port}", config.token)
    return made


@dataclass(frozen=True)
class Cases:
    compensated: dict[str, Any]
    waiting: dict[str, Any]


def run_cases(home: StateHome, folder: Path) -> Cases:
    """CASE-1 is compensated (shipment rejected), CASE-2 waits for a decision."""
    first = cli(
        home, "start", str(write_case(folder, "CASE-1")), "--faults", str(REJECTED), "--json"
    )
    second = cli(
        home, "start", str(write_case(folder, "CASE-2")), "--faults", str(UNVERIFIABLE), "--json"
    )
    assert (first.code, second.code) == (0, 0), first.err + second.err
    return Cases(first.json(), second.json())


def chromium() -> str:
    """Debian's chromium (``make browser`` installs it); skipped in one line without it,
    a failure under ``CI=true``."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    reason = None
    if found is None:
        reason = "no chromium on PATH (make browser installs Debian's package)"
    else:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            reason = "playwright is not installed (pip install -e '.[dev]')"
    if reason is not None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    assert found is not None
    return found


AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"


def axe_script() -> Path:
    """axe-core from npm (``package.json``; ``make test`` runs ``npm ci``); skipped in one
    line without it, a failure under ``CI=true``."""
    if not AXE.is_file():
        reason = f"no {AXE.relative_to(ROOT)} (npm ci installs axe-core)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return AXE


#: Chromium's flags for the tests: headless, and nothing that reaches the network.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


#: Where the browser tests save their screenshots (``make screenshots``: ``docs/console``).
SHOTS = Path(os.environ.get("STEPSAGA_SCREENSHOTS") or ROOT / "build" / "screenshots")


def screenshot(page: Page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


@contextmanager
def launched_chromium() -> Iterator[Browser]:
    """Debian's chromium through playwright (skipped in one line without either), with
    :data:`CHROMIUM_ARGS`: one per test module."""
    executable = chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield launched
        launched.close()
