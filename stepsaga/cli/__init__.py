"""The ``stepsaga`` command line (typer). One module per command group."""
