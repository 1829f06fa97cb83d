"""Chaos benchmark: N approved cases under random faults and real SIGKILLs, recovered like an
operator would, every invariant checked from the services' effects table and the ledger.

    .venv/bin/python bench/chaos.py                      # 1,000 cases, the default seed
    .venv/bin/python bench/chaos.py --cases 200 --seed 7
    .venv/bin/python bench/chaos.py --seed 7 --only 137  # reproduce one case of a run
    .venv/bin/python bench/chaos.py --json               # the counts as JSON
    .venv/bin/python bench/chaos.py --revise 1           # then every settled case as revision 2

Prints the seed, cases run, kills injected (by site), recoveries, outcomes by kind,
effects, duplicates found (must be 0) and every invariant violation with the case plan that
reproduces it. Exit status 1 if any invariant is broken. The harness is
``chaos/``; ``tests/framework/chaos/test_crash_harness.py`` runs it small in CI.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

#: The reference app (``reliability`` is its harness) lives beside ``bench/``.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reliability import ChaosConfig, run_chaos


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    defaults = ChaosConfig()
    parser.add_argument("--cases", type=int, default=1000, help="cases to run (default 1000)")
    parser.add_argument("--seed", type=int, default=defaults.seed, help="the plan's seed")
    parser.add_argument("--parallel", type=int, default=defaults.parallel, help="children")
    parser.add_argument("--only", type=int, nargs="*", default=[], help="case indexes to run")
    parser.add_argument("--keep", type=Path, help="run in this (empty) folder and keep it")
    parser.add_argument(
        "--revise",
        type=float,
        default=0.0,
        help="share of settled cases re-approved as revision 2 (0 to 1; default 0)",
    )
    parser.add_argument("--json", action="store_true", help="print the counts as JSON")
    args = parser.parse_args()
    config = ChaosConfig(
        cases=args.cases,
        seed=args.seed,
        parallel=args.parallel,
        only=tuple(args.only),
        revise=args.revise,
    )

    def say(line: str) -> None:
        if not args.json:
            print(line, flush=True)

    say(f"chaos: seed {config.seed}, {config.cases} cases, {config.parallel} at a time")
    with tempfile.TemporaryDirectory(prefix="stepsaga-chaos-") as scratch:
        root = args.keep if args.keep is not None else Path(scratch)
        report = run_chaos(config, root, say=say)
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        print("\n".join(report.lines()))
        for violation in report.violations:
            print(violation)
    return 1 if report.violations else 0


if __name__ == "__main__":
    sys.exit(main())
