"""Real downstream services over HTTP (httpx); the wire contract is in ``services/README.md``."""

from stepsaga.services.http.config import HttpServicesConfig, HttpTimeouts
from stepsaga.services.http.inventory import HttpInventory
from stepsaga.services.http.payments import HttpPayments
from stepsaga.services.http.shipping import HttpShipping

__all__ = ["HttpInventory", "HttpPayments", "HttpServicesConfig", "HttpShipping", "HttpTimeouts"]
