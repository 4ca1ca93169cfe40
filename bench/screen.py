"""The screen's cost on an agent's write, beside the credential detector's on the same text.

Every write from an agent session is screened once, when it is indexed
(``hikmah.index.review.screened``), and every write of anyone passes the credential
detector (``hikmah.model.secrets.check_fields``): the detector is the baseline, measured in
the same run on the same texts. Texts: each ordinary note of tests/eval/screen/dev1.toml
(the median of each note's best of ``repeats``), and those notes joined into 2 KiB and
256 KiB of prose (best of ``repeats``), the worst case: dense with the words the rules
look for.

    .venv/bin/python bench/screen.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hikmah.model import screen
from hikmah.model.secrets import check_fields

SET = Path(__file__).parents[1] / "tests" / "eval" / "screen" / "dev1.toml"


def _best_ms(call: Callable[[], object], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        began = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - began)
    return best * 1000


def _detect(text: str) -> None:
    try:
        check_fields([("content", text)])
    except Exception:  # a refusal costs what a pass costs: the scan is the same
        return


def measure(repeats: int) -> dict[str, Any]:
    notes = [n["text"] for n in tomllib.loads(SET.read_text(encoding="utf-8"))["note"]]
    prose = " ".join(notes)
    found: dict[str, Any] = {
        "note_screen_ms": statistics.median(
            _best_ms(lambda n=n: screen.quarantined(n), repeats) for n in notes
        ),
        "note_detector_ms": statistics.median(
            _best_ms(lambda n=n: _detect(n), repeats) for n in notes
        ),
    }
    for size, name in ((2 << 10, "2k"), (256 << 10, "256k")):
        text = (prose * (size // len(prose) + 1))[:size]
        found[f"prose_{name}_screen_ms"] = _best_ms(lambda t=text: screen.quarantined(t), repeats)
        found[f"prose_{name}_detector_ms"] = _best_ms(lambda t=text: _detect(t), repeats)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    print(json.dumps(measure(parser.parse_args().repeats), indent=2))


if __name__ == "__main__":
    main()
