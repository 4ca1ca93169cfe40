"""``review.*``: what agents wrote that waits for a person's look."""

from __future__ import annotations

from hikmah.model.wire.base import Signature

METHODS: dict[str, Signature] = {}
