"""``python -m stepsaga``: the same CLI as the ``stepsaga`` script."""

from stepsaga.cli import main

main()
