"""Private: a project (its ``pyproject.toml`` settings, its dependencies, its state home,
the names its deployment shares with the code that runs against it)."""
