"""``sync.*``: pairing devices and exchanging records through a folder."""

from __future__ import annotations

from hikmah.model.wire.base import Signature

METHODS: dict[str, Signature] = {}
