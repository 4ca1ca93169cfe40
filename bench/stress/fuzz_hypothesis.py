"""The property-based fuzzing of tests/reliability with many more examples.

    .venv/bin/python bench/stress/fuzz_hypothesis.py [--examples 2000] [-- PYTEST ARGS]

Runs ``tests/reliability/test_fuzz_methods.py`` (hostile params for every method
of the live dispatcher, through the real connection, dispatcher and writer) and
``tests/reliability/test_fuzz_frames.py`` (the frame reader and the connection
around it) with ``--examples`` examples per property instead of the suite's 20,
and prints the time taken (40 properties: one per method, three on frames, so
about 40 times ``--examples`` inputs). Hypothesis keeps the failures it finds in
``.hypothesis/`` and replays them first on the next run.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FILES = ["tests/reliability/test_fuzz_methods.py", "tests/reliability/test_fuzz_frames.py"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--examples", type=int, default=2000, help="per property (2000)")
    p.add_argument("pytest_args", nargs="*", help="more pytest arguments, after --")
    args = p.parse_args()
    env = {**os.environ, "HIKMAH_FUZZ_EXAMPLES": str(args.examples)}
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *FILES,
         *args.pytest_args],
        cwd=ROOT, env=env, check=False,
    )  # fmt: skip
    print(
        f"{args.examples} examples per property, {time.monotonic() - started:.0f} s;"
        f" pytest exit {done.returncode}"
    )
    sys.exit(done.returncode)


if __name__ == "__main__":
    main()
