"""``vault.*``: the vault's state, and rotating its keys."""

from __future__ import annotations

from hikmah.model.wire.base import Signature

METHODS: dict[str, Signature] = {}
