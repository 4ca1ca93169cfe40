"""``presence.*``: a person proving they are at the terminal."""

from __future__ import annotations

from hikmah.model.wire.base import Signature

METHODS: dict[str, Signature] = {}
