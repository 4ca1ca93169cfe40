"""docs/protocol.md describes every method the daemon serves, and nothing it does not."""

from __future__ import annotations

import re
from pathlib import Path

from hikmahd.daemon import REGISTRIES
from hikmahd.rpc import Dispatcher

PROTOCOL = Path(__file__).parents[2] / "docs" / "protocol.md"


def test_every_served_method_has_a_section_and_the_count_is_right() -> None:
    served = set(Dispatcher(*REGISTRIES).registry.methods)
    text = PROTOCOL.read_text()
    documented = set(re.findall(r"^### ([a-z_]+\.[a-z_]+)$", text, re.M))
    notifications = {"reminder.due", "memory.changed", "replay.proposals", "review.waiting"}
    assert served - documented == set()
    assert documented - served - notifications == set()
    assert "Fifty-six methods are served." in text and len(served) == 56
