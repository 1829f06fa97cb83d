"""infra package."""
