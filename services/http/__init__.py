"""Real downstream services over HTTP (httpx); the wire contract is in ``services/README.md``."""

from services.http.config import HttpServicesConfig, HttpTimeouts
from services.http.inventory import HttpInventory
from services.http.payments import HttpPayments
from services.http.shipping import HttpShipping

__all__ = ["HttpInventory", "HttpPayments", "HttpServicesConfig", "HttpShipping", "HttpTimeouts"]
