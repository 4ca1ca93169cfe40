"""The acknowledged head, kept outside LMDB in a small file of two checksummed slots.

Each write goes to the slot not holding the newest state and is made durable
with one ``fdatasync``: no temporary file, no rename, no directory sync. A
write torn by a power cut fails its checksum and the other slot (the state
before) is read instead, as LMDB does with its two meta pages. The file is
created whole, with its first state, by a rename: a head file that exists
always has an intact slot.

A slot is 256 bytes: magic, generation, the acknowledged head, an optional
pending head, and a BLAKE3 checksum of everything before it.
"""

from __future__ import annotations

import contextlib
import os
import struct
from pathlib import Path

import blake3

from hikmah.ledger.chain import GENESIS
from hikmah.model.durable import write_atomic
from hikmah.model.errors import LedgerError
from hikmah.model.head import Head

MAGIC = b"HKHEAD1\n"
SLOT = 256
_BODY = struct.Struct(">8sQQ32s?Q32s")  # magic, generation, seq, hash, has pending, seq, hash
_DIGEST = 32
_NO_HASH = bytes(32)


def _pack_hash(digest: str) -> bytes:
    return _NO_HASH if digest == GENESIS else bytes.fromhex(digest)


def _unpack_hash(seq: int, raw: bytes) -> str:
    return GENESIS if seq == 0 and raw == _NO_HASH else raw.hex()


class HeadFile:
    """Read and write the head file at ``path``; ``sync=False`` skips the fdatasync
    (a store whose LMDB commits are not synced either, for benchmarks only)."""

    def __init__(self, path: Path, *, sync: bool = True) -> None:
        self.path = path
        self.sync = sync
        self._fd: int | None = None
        self._generation = 0

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def read(self) -> tuple[Head | None, Head | None]:
        """(acknowledged, pending); (None, None) when there is no head file yet.

        Raises:
            LedgerError: the file cannot be read, or neither slot is intact.
        """
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return None, None
        except OSError as exc:
            raise LedgerError(f"cannot read the ledger head {self.path}: {exc.strerror}") from None
        if not data.strip(b"\0"):
            return None, None  # created by a version that died before its first state
        slots = [_decode(data[i * SLOT : (i + 1) * SLOT]) for i in range(2)]
        intact = [slot for slot in slots if slot is not None]
        if not intact:
            raise LedgerError(f"the ledger head {self.path} is corrupt: no intact slot")
        generation, acknowledged, pending = max(intact, key=lambda slot: slot[0])
        self._generation = generation
        return acknowledged, pending

    def write(self, acknowledged: Head | None, pending: Head | None) -> None:
        """Record a new head state durably (in the slot the newest state is not in).

        Raises:
            LedgerError: the file cannot be written.
        """
        head = acknowledged or Head(seq=0, hash=GENESIS)
        # The generation advances only once the slot is durable: after a failed
        # write the next one retries the same (older) slot, never the newest good one.
        generation = self._generation + 1
        body = _BODY.pack(
            MAGIC,
            generation,
            head.seq,
            _pack_hash(head.hash),
            pending is not None,
            0 if pending is None else pending.seq,
            _NO_HASH if pending is None else _pack_hash(pending.hash),
        )
        slot = (body + blake3.blake3(body).digest()).ljust(SLOT, b"\0")
        offset = (generation % 2) * SLOT
        try:
            fd = self._fd if self._fd is not None else self._open()
            if fd is None:
                self._create(slot, offset)
            else:
                os.pwrite(fd, slot, offset)
                if self.sync:
                    os.fdatasync(fd)
        except OSError as exc:
            raise LedgerError(f"cannot write the ledger head {self.path}: {exc.strerror}") from None
        self._generation = generation

    def _open(self) -> int | None:
        """The file opened for writing; None when there is none yet."""
        with contextlib.suppress(FileNotFoundError):
            self._fd = os.open(self.path, os.O_RDWR)
        return self._fd

    def _create(self, slot: bytes, offset: int) -> None:
        # A file zeroed and then written would have no intact slot if the process died
        # in between: it appears by rename, already holding its first state.
        whole = bytearray(2 * SLOT)
        whole[offset : offset + SLOT] = slot
        write_atomic(self.path, whole, 0o600)
        self._open()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()


def _decode(slot: bytes) -> tuple[int, Head, Head | None] | None:
    if len(slot) < _BODY.size + _DIGEST:
        return None
    body, digest = slot[: _BODY.size], slot[_BODY.size : _BODY.size + _DIGEST]
    if blake3.blake3(body).digest() != digest:
        return None
    magic, generation, seq, raw, has_pending, pending_seq, pending_raw = _BODY.unpack(body)
    if magic != MAGIC:
        return None
    acknowledged = Head(seq=seq, hash=_unpack_hash(seq, raw))
    pending = Head(seq=pending_seq, hash=pending_raw.hex()) if has_pending else None
    return generation, acknowledged, pending
