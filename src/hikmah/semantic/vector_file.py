"""The vector file of a store's semantic index (:mod:`hikmah.semantic.store_vectors`):
written, read back and checked against the store.

The file (``vectors`` in the data directory) holds the graph's bytes, the recent
vectors' bytes, each passage's document number, a JSON header (model stamp, the
frontier, the trace id before it, the documents behind below it, sizes) and a
trailer (header length, magic). It is written to a temporary name, synced and
renamed. Under the vault the parts are sealed under a data key of their own, new
for every save and wrapped by the master key, so no vector of a sealed trace is
ever on disk in the clear. A file of another model, a damaged one, or one that
names a document the store does not hold at that number (the store lost a commit
the file had seen) is :class:`StaleVectors`: the vectors are built again from the
store.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import msgspec
import numpy as np
import numpy.typing as npt

from hikmah.index.snapshot import Snapshot
from hikmah.model.durable import write_atomic
from hikmah.model.errors import HikmahError
from hikmah.semantic.embedding import ModelStamp
from hikmah.semantic.vector_index import FlatIndex, HnswIndex, restore_index
from hikmah.vault.crypto import VaultError
from hikmah.vault.sealing import Keys, open_file, rewrapped, seal_file

VECTORS_FILE = "vectors"
MAGIC = b"HIKMAH-VECTORS-3"
_TRAILER = struct.Struct(f"<Q{len(MAGIC)}s")
_AAD = b"hikmah vectors"


class StaleVectors(HikmahError):
    """A vector file cannot be used (another model, damaged, behind a lost commit)."""


class _Header(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    stamp: ModelStamp
    frontier: int  # documents below it are reflected, but for ``behind``
    last_id: str | None  # the trace before frontier: a store that lost it reuses the number
    behind: list[int]  # documents below frontier still without their vectors
    graph_bytes: int  # the graph's dump comes first, then recent's, then the passages'
    flat_bytes: int
    passages: int  # the documents of passages 0..passages-1 (uint32 each)
    key_entry: str | None = None  # hex: the wrapped data key, when the parts are sealed


class Saved(NamedTuple):
    """What a vector file holds, as the index takes it back."""

    recent: FlatIndex
    graph: HnswIndex | None
    doc_of: npt.NDArray[np.uint32]  # passage -> document
    held: npt.NDArray[np.intp]  # the passages the two indexes hold
    frontier: int
    last_id: str | None
    behind: list[int]


def write_vectors(
    path: Path,
    stamp: ModelStamp,
    keys: Keys | None,
    *,
    graph: bytes | bytearray,
    flat: bytes | bytearray,
    passages: bytes,
    frontier: int,
    last_id: str | None,
    behind: Sequence[int],
) -> None:
    """Write the dumps of the graph and the recent vectors, each passage's document
    (``passages``: uint32 each) and where the vectors stand to ``path`` (sealed under
    ``keys`` when the vault is on)."""
    entry = None
    parts: list[bytes | bytearray] = [graph, flat, passages]
    if keys is not None:
        sealed, key = seal_file(keys, b"".join(parts), aad=_AAD)
        parts, entry = [sealed], key.hex()
    header = msgspec.json.encode(
        _Header(
            stamp=stamp,
            frontier=frontier,
            last_id=last_id,
            behind=list(behind),
            graph_bytes=len(graph),
            flat_bytes=len(flat),
            passages=len(passages) // 4,
            key_entry=entry,
        )
    )
    write_atomic(path, [*parts, header, _TRAILER.pack(len(header), MAGIC)], 0o600)


def read_vectors(path: Path, stamp: ModelStamp, snapshot: Snapshot, keys: Keys | None) -> Saved:
    """The vectors the file at ``path`` holds, if they are ``stamp``'s and fit
    ``snapshot``'s store.

    Raises:
        StaleVectors: no file, a damaged one, another model's, sealed without the
            keys (or with the vault off), or behind a commit the store lost.
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise StaleVectors(f"{path}: cannot be read: {exc}") from None
    header, payload = _split(path, data)
    if header.stamp != stamp:
        raise StaleVectors(
            f"{path}: vectors of {header.stamp.name} {header.stamp.version}"
            f" ({header.stamp.dimensions}-d), the model is {stamp.name}"
            f" {stamp.version} ({stamp.dimensions}-d)"
        )
    if (header.key_entry is None) != (keys is None):
        raise StaleVectors(f"{path}: sealed and the vault is off, or the other way")
    if header.key_entry is not None and keys is not None:
        try:
            payload = memoryview(
                open_file(keys, bytes(payload), bytes.fromhex(header.key_entry), aad=_AAD)
            )
        except (VaultError, ValueError) as exc:
            raise StaleVectors(f"{path}: does not open: {exc}") from None
    flat_end = header.graph_bytes + header.flat_bytes
    if len(payload) != flat_end + 4 * header.passages:
        raise StaleVectors(f"{path}: shorter than its header says")
    if header.frontier > snapshot.next_docno() or (
        header.frontier and snapshot.bare_trace_at(header.frontier - 1).id != header.last_id
    ):
        raise StaleVectors(f"{path}: reflects writes the store does not hold")
    try:
        graph = (
            restore_index("hnsw", stamp, payload[: header.graph_bytes])
            if header.graph_bytes
            else None
        )
        recent = restore_index("flat", stamp, payload[header.graph_bytes : flat_end])
    except ValueError as exc:
        raise StaleVectors(f"{path}: damaged: {exc}") from None
    assert isinstance(recent, FlatIndex) and (graph is None or isinstance(graph, HnswIndex))
    doc_of = np.frombuffer(payload[flat_end:], dtype=np.uint32).copy()
    held = np.concatenate([recent.ids(), np.zeros(0) if graph is None else graph.ids()])
    held = held.astype(np.intp)
    if len(held) and int(held.max()) >= len(doc_of):
        raise StaleVectors(f"{path}: damaged: a passage without its document")
    return Saved(recent, graph, doc_of, held, header.frontier, header.last_id, header.behind)


def _split(path: Path, data: bytes) -> tuple[_Header, memoryview]:
    if len(data) < _TRAILER.size:
        raise StaleVectors(f"{path}: not a vector file")
    length, magic = _TRAILER.unpack_from(data, len(data) - _TRAILER.size)
    end = len(data) - _TRAILER.size
    if magic != MAGIC or length > end:
        raise StaleVectors(f"{path}: not a vector file (or one of an older Hikmah)")
    try:
        header = msgspec.json.decode(data[end - length : end], type=_Header)
    except msgspec.DecodeError as exc:
        raise StaleVectors(f"{path}: damaged vector header: {exc}") from None
    return header, memoryview(data)[: end - length]


def rewrap_vectors(data_dir: Path, keys: Keys) -> bool:
    """Re-wrap the sealed vector file's data key under the current master (a rotation
    does it before the old master leaves the keyring); True when the file changed.

    Raises:
        VaultError: the key does not unwrap under any master ``keys`` has.
    """
    path = vectors_path(data_dir)
    try:
        data = path.read_bytes()
        header, payload = _split(path, data)
    except (OSError, StaleVectors):
        return False  # nothing usable to keep: the vectors are built again anyway
    if header.key_entry is None:
        return False
    entry = rewrapped(keys, "the vector file", bytes.fromhex(header.key_entry))
    if entry is None:
        return False
    encoded = msgspec.json.encode(msgspec.structs.replace(header, key_entry=entry.hex()))
    write_atomic(path, [payload, encoded, _TRAILER.pack(len(encoded), MAGIC)], 0o600)
    return True


def vectors_path(data_dir: Path) -> Path:
    """Where the vectors of the store in ``data_dir`` are kept."""
    return data_dir / VECTORS_FILE


def remove_vectors(data_dir: Path) -> None:
    """Delete a data directory's vector file (its documents were renumbered)."""
    vectors_path(data_dir).unlink(missing_ok=True)
