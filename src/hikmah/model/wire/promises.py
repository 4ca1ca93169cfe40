"""``promises.*``: the promise queue, commitments by deadline."""

from __future__ import annotations

from hikmah.model.wire.base import Signature

METHODS: dict[str, Signature] = {}
