"""``focus.*``: focus capsules, the working set of a task."""

from __future__ import annotations

from hikmah.model.wire.base import Signature

METHODS: dict[str, Signature] = {}
