"""Private: plumbing (clocks, page tokens, SQLite WAL, lazy imports); the clocks are
re-exported by ``stepsaga``."""
