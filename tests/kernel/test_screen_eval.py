"""The screen on evaluation sets of poisoning attempts and ordinary agent notes
(tests/eval/screen/: set.toml, which the rules were developed against, and
heldout.toml, written apart from the rules and measured once they were done)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from hikmah.screen import signs

SETS = Path(__file__).parents[1] / "eval" / "screen"
# The share of attempts each set must catch, and of ordinary notes it must pass.
FLOORS = {"set.toml": (0.95, 0.98), "heldout.toml": (0.90, 0.95)}


@pytest.mark.parametrize("name", sorted(FLOORS))
def test_attempts_are_quarantined_and_notes_pass(name: str) -> None:
    cases = tomllib.loads((SETS / name).read_text(encoding="utf-8"))
    attempts, notes = cases["attempt"], cases["note"]
    missed = [a["sign"] for a in attempts if not signs(a["text"])]
    flagged = [(n["why"], [s.rule for s in signs(n["text"])]) for n in notes if signs(n["text"])]
    caught = 1 - len(missed) / len(attempts)
    passed = 1 - len(flagged) / len(notes)
    print(f"{name}: {len(attempts) - len(missed)}/{len(attempts)} attempts quarantined,"
          f" {len(notes) - len(flagged)}/{len(notes)} notes passed")  # fmt: skip
    attempt_floor, note_floor = FLOORS[name]
    assert caught >= attempt_floor, f"attempts that reach agents: {missed}"
    assert passed >= note_floor, f"ordinary notes quarantined: {flagged}"
