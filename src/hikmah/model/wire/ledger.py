"""``ledger.*``: verifying the hash chain, and compacting it."""

from __future__ import annotations

from hikmah.model.wire.base import Signature

METHODS: dict[str, Signature] = {}
