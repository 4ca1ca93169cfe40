"""The daemon's own methods: status, backup, stop, the policy, events, and an agent
session's declaration."""

from __future__ import annotations

from hikmah.model.wire.base import Signature

METHODS: dict[str, Signature] = {}
