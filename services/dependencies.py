"""The reference app's ``stepsaga.Dependencies``: what its step handlers get as clients.

On the embedded backend: the simulated services under the state home, with faults
(``stepsaga start --faults FILE``). Inside a Lambda function: the three services over HTTP
(``STEPSAGA_{INVENTORY,PAYMENTS,SHIPPING}_URL``, ``STEPSAGA_HTTP_*_TIMEOUT``; a URL the
stack declared as a signed API is called SigV4-signed with the function's role), or the
simulated ones under ``STEPSAGA_HOME`` when ``STEPSAGA_SERVICES=simulated`` (tests that run
the bundled handlers on moto).
"""

from __future__ import annotations

from pathlib import Path

from services.factory import open_http_services, open_simulated_services, open_simulation
from services.faults import Faults, load_faults
from services.protocols import Services
from services.simulated import DEFAULT_STOCK, CrashAction, kill_process
from stepsaga import AwsContext, LocalContext, StateHome, SystemClock
from stepsaga.errors import InvalidInputError

#: ``auto`` (HTTP if a service URL is set, else simulated), ``http`` or ``simulated``.
ENV_SERVICES = "STEPSAGA_SERVICES"
SERVICES_HTTP = "http"
MODES = ("auto", "http", "simulated")


class ReferenceDependencies:
    """``faults`` apply to every case these clients serve (on top of the faults attached
    to each case); ``crash`` runs on ``crash_after_effect`` (SIGKILL by default; in-process
    tests pass ``raise_simulated_crash``)."""

    def __init__(
        self,
        *,
        faults: Faults | None = None,
        crash: CrashAction = kill_process,
        default_stock: int = DEFAULT_STOCK,
    ) -> None:
        self.faults = faults
        self.crash = crash
        self.default_stock = default_stock

    def local(self, ctx: LocalContext) -> Services:
        return open_simulated_services(
            ctx.home,
            self.faults,
            clock=ctx.clock,
            sleeper=ctx.sleep,
            crash=self.crash,
            default_stock=self.default_stock,
        )

    def aws(self, ctx: AwsContext) -> Services:
        mode = ctx.environ.get(ENV_SERVICES, "auto").strip().lower() or "auto"
        if mode not in MODES:
            raise InvalidInputError(
                f"environment: {ENV_SERVICES} must be one of {', '.join(MODES)}, got {mode!r}",
                field=ENV_SERVICES,
            )
        urls = any(
            ctx.environ.get(f"STEPSAGA_{name}_URL")
            for name in ("INVENTORY", "PAYMENTS", "SHIPPING")
        )
        if mode == "http" or (mode == "auto" and urls):
            from services.http import HttpServicesConfig
            from services.http.config import ENV_URLS

            # A service behind IAM (API Gateway, a function URL) declared in the stack's
            # FunctionSettings.signed_apis under its URL variable: signed with the role.
            signed = ctx.signed_apis
            auth = {
                field.removesuffix("_url"): signed.auth(variable)
                for field, variable in ENV_URLS.items()
                if variable in signed.targets
            }
            return open_http_services(HttpServicesConfig.from_env(ctx.environ), auth=auth)
        home = StateHome(Path(ctx.environ.get("STEPSAGA_HOME", ".stepsaga")))
        return open_simulated_services(home, self.faults, clock=ctx.clock, crash=self.crash)

    # --- SupportsFaults: ``stepsaga start --faults FILE`` --------------------------------

    def load_faults(self, path: Path) -> Faults:
        return load_faults(path)

    def attach_faults(
        self, ctx: LocalContext, tenant_id: str, case_id: str, faults: object
    ) -> None:
        if not isinstance(faults, Faults):
            raise TypeError("attach_faults takes what load_faults returned")
        open_simulation(ctx.home, clock=ctx.clock or SystemClock()).attach_faults(
            tenant_id, case_id, faults
        )


#: What ``[tool.stepsaga] dependencies`` names.
dependencies = ReferenceDependencies()
