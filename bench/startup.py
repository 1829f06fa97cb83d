"""Interleaved start-up timing of whole commands: wall and CPU (user + sys) per run.

    .venv/bin/python bench/startup.py 15 \\
        aws='/root/.pyenv/versions/3.11.7/bin/aws --version' \\
        status='.venv/bin/python -m stepsaga status CASE_ID'

Each ``name='command'`` runs once to warm up, then once per round in the given order; the
ratios are to the first command, per round (the machine is shared: compare one run only).
"""

from __future__ import annotations

import resource
import shlex
import statistics
import subprocess
import sys
import time


def _run(argv: list[str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{shlex.join(argv)} failed: {done.stderr.decode()[-400:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    rounds = int(sys.argv[1])
    commands = {arg.split("=", 1)[0]: shlex.split(arg.split("=", 1)[1]) for arg in sys.argv[2:]}
    wall: dict[str, list[float]] = {name: [] for name in commands}
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    for argv in commands.values():
        _run(argv)
    for _ in range(rounds):
        for name, argv in commands.items():
            seconds, used = _run(argv)
            wall[name].append(seconds)
            cpu[name].append(used)
    first = next(iter(commands))
    for name in commands:
        w = [a / b for a, b in zip(wall[name], wall[first], strict=True)]
        c = [a / b for a, b in zip(cpu[name], cpu[first], strict=True)]
        print(
            f"{name:10} wall min {min(wall[name]) * 1000:5.0f} / median "
            f"{statistics.median(wall[name]) * 1000:5.0f} ms; cpu min {min(cpu[name]) * 1000:5.0f}"
            f" / median {statistics.median(cpu[name]) * 1000:5.0f} ms; vs {first}: wall median "
            f"{statistics.median(w):.2f}x, cpu median {statistics.median(c):.2f}x "
            f"(min {min(c):.2f}x)"
        )


if __name__ == "__main__":
    main()
