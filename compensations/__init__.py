"""compensations package."""
