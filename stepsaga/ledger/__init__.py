"""The action ledger: durable claims that make every side effect retry-safe."""
