"""The markers of the block ``hikmah writeback`` keeps in an instruction file, and the
checksum that tells text a hikmah command wrote from text edited since.

One definition for the writer (``hikmah_cli.writeback``) and for the import of
``CLAUDE.md`` / ``AGENTS.md`` files, which skips the block: it holds memory
that came from Hikmah in the first place. Marker lines are recognised only as
whole lines, surrounding whitespace allowed. ``hikmah setup`` marks the files it
owns whole (units, a policy rule, a plugin) with the same checksum.
"""

from __future__ import annotations

import hashlib
import re

BEGIN = "<!-- hikmah:begin -->"
END = "<!-- hikmah:end -->"
BEGIN_LINE = re.compile(r"<!-- hikmah:begin(?:\s+(?P<attrs>[^>]*?))?\s*-->")


def is_begin(line: str) -> bool:
    """Whether ``line`` opens the block (with or without its checksum)."""
    return BEGIN_LINE.fullmatch(line.strip()) is not None


def is_end(line: str) -> bool:
    """Whether ``line`` closes the block."""
    return line.strip() == END


def checksum(body: str) -> str:
    """The first 16 hex digits of the SHA-256 of ``body`` (CRLF read as LF): recorded
    beside text a command writes, it no longer matches once the text is edited."""
    return hashlib.sha256(body.replace("\r\n", "\n").encode("utf-8")).hexdigest()[:16]
