"""The blake3 of a file, read a chunk at a time (a model's weights, a backup's store)."""

from __future__ import annotations

from pathlib import Path

import blake3

_CHUNK = 1 << 22


def file_blake3(path: Path) -> str:
    """The hex blake3 of the file at ``path``."""
    digest = blake3.blake3()
    with path.open("rb") as file:
        while chunk := file.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()
