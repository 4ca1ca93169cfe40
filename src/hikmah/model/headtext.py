"""A ledger head as text: ``SEQ:HASH``, as ``verify-ledger`` prints it and ``--expect-head``
takes it.

Standard library only: the CLI checks the flag before it reads a file.
"""

from __future__ import annotations

from hikmah.model.errors import InvalidInput


def parse_head(text: str) -> tuple[int, str]:
    """The seq and hash of a head written ``SEQ:HASH``.

    Raises:
        InvalidInput: it is not written so.
    """
    seq, sep, digest = text.partition(":")
    if not sep or not seq.isdigit() or len(digest) != 64:
        raise InvalidInput("expect_head must be SEQ:HASH, as verify-ledger prints the head")
    return int(seq), digest
