"""Retry-storm benchmark: 64 simultaneous deliveries of each of 100 actions, counted from
the simulated services' effects table (must be exactly 100), every caller's result compared
(must be one per action), the tenant budget debited once per action.

    .venv/bin/python bench/storm.py                    # every variant at full size
    .venv/bin/python bench/storm.py --actions 20       # smaller

Variants: 64 threads on one SQLite ledger; 4 processes x 16 threads and 64 processes on
the same file; 64 threads on DynamoDB (moto, one request at a time, as DynamoDB applies
each conditional write atomically). Exit status 1 if any delivery saw a second effect or a
different result. The harness is ``reliability/storm.py``;
``tests/framework/chaos/test_retry_storm.py`` runs it in CI.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

#: The reference app (``reliability`` is its harness) lives beside ``bench/``.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reliability.storm import StormConfig, run_storm


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--actions", type=int, default=100, help="actions (default 100)")
    parser.add_argument("--deliveries", type=int, default=64, help="per action (default 64)")
    args = parser.parse_args()
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    variants = [
        StormConfig(args.actions, args.deliveries),
        StormConfig(args.actions, args.deliveries, processes=4),
        StormConfig(args.actions, args.deliveries, processes=args.deliveries),
        StormConfig(args.actions, args.deliveries, ledger="dynamodb"),
    ]
    broken = 0
    for config in variants:
        with tempfile.TemporaryDirectory(prefix="stepsaga-storm-") as root:
            report = run_storm(config, Path(root))
        print("\n".join(report.lines()), flush=True)
        for violation in report.violations:
            print(f"  {violation}")
        broken += len(report.violations)
    print(f"duplicates or differing results found: {broken}")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
