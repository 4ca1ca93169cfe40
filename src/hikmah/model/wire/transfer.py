"""``memory.export`` and the imports: traces out, and traces, ledgers and other tools' files in."""

from __future__ import annotations

from hikmah.model.wire.base import Signature

METHODS: dict[str, Signature] = {}
