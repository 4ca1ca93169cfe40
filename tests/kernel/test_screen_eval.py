"""The screen on evaluation sets of poisoning attempts and ordinary agent notes
(tests/eval/screen/). Each was written by someone who had not seen the rules: dev1 to
dev3 were measured, then the rules were developed against them (their first, blind
figures are in docs/security.md); heldout.toml was measured once, after."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from hikmah.model import screen, screen_together
from hikmah.model.screen import signs
from hikmah.model.screen_match import Search, Text

SETS = Path(__file__).parents[1] / "eval" / "screen"
# The share of attempts each set must catch, and of ordinary notes it must pass.
FLOORS = {
    "dev1.toml": (0.95, 0.98),
    "dev2.toml": (0.95, 0.98),
    "dev3.toml": (0.90, 0.97),
    "heldout.toml": (0.25, 0.94),  # what it measured: a floor against regressions
}


def cases(name: str) -> dict[str, list[dict[str, str]]]:
    return tomllib.loads((SETS / name).read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", sorted(FLOORS))
def test_attempts_are_quarantined_and_notes_pass(name: str) -> None:
    found = cases(name)
    attempts, notes = found["attempt"], found["note"]
    missed = [a["sign"] for a in attempts if not signs(a["text"])]
    flagged = [(n["why"], [s.rule for s in signs(n["text"])]) for n in notes if signs(n["text"])]
    caught = 1 - len(missed) / len(attempts)
    passed = 1 - len(flagged) / len(notes)
    print(f"{name}: {len(attempts) - len(missed)}/{len(attempts)} attempts quarantined,"
          f" {len(notes) - len(flagged)}/{len(notes)} notes passed")  # fmt: skip
    attempt_floor, note_floor = FLOORS[name]
    assert caught >= attempt_floor, f"attempts that reach agents: {missed}"
    assert passed >= note_floor, f"ordinary notes quarantined: {flagged}"


def test_every_match_holds_one_of_its_anchors() -> None:
    """A search skips the alternatives whose anchors a text lacks: an anchor list that
    misses a word its pattern matches would skip a sign (checked on every set's text)."""
    searches = [
        v
        for module in (screen, screen_together)
        for v in vars(module).values()
        if isinstance(v, Search)
    ]
    texts = [case["text"] for path in sorted(SETS.glob("*.toml")) for kind in ("attempt", "note")
             for case in cases(path.name)[kind]]  # fmt: skip
    unanchored = {p for s in searches for t in texts for p in s.unanchored(Text.of(t))}
    assert unanchored == set()
