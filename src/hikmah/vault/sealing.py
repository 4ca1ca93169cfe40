"""How the store keeps a trace under the vault: sealed text, a wrapped key, blind terms.

:mod:`hikmah.vault.crypto` has the cryptography; this module applies it to traces.
A sealed trace is kept as a :class:`Sealed` value: the trace with its
writer-controlled text blanked (content, tags, claim key and value,
locator), the sealed text, and the key id of the master that wrapped its
data key at write time. The ledger's remember record and the ``docs`` index
both hold it, so the hash chain covers ciphertext and key id, never
plaintext. The wrapped data key itself lives in the ``keys`` database (trace
id → key id of its current master + 40 wrapped bytes): deleting that entry
is what purge does, and rotation rewrites only those entries.

The store is handed a :class:`Keys` (the daemon's ``hikmahd.keys.VaultKeys``
is one) and never sees the keyring.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Final, Protocol

import msgspec

from hikmah.model.trace import Provenance, Trace
from hikmah.vault.crypto import (
    KEY_ID_HEX,
    WRAPPED_BYTES,
    DataKey,
    DecryptionFailed,
    IndexKey,
    MasterKey,
    PlainFields,
    SealedFields,
    VaultLocked,
    blind,
    key_id,
    new_data_key,
    new_index_key,
    new_master_key,
    open_fields,
    open_sealed,
    rewrap,
    seal,
    seal_fields,
    unwrap,
    wrap,
)

KEY_ENTRY_BYTES: Final = KEY_ID_HEX + WRAPPED_BYTES


class Keys(Protocol):
    """The long-lived keys the store needs (the keyring holds them)."""

    @property
    def master(self) -> MasterKey: ...

    @property
    def master_id(self) -> str: ...

    @property
    def index(self) -> IndexKey: ...

    @property
    def index_id(self) -> str: ...

    def master_for(self, wrapped_by: str) -> MasterKey: ...


class Sealed(msgspec.Struct, frozen=True, kw_only=True, tag_field="type", tag="sealed"):
    """A trace as the vault stores it: no plaintext of the writer's text."""

    trace: Trace
    sealed: SealedFields
    key_id: str
    at: int | None = None  # when it was written (see hikmah.ledger.payloads.written_at)


def seal_trace(keys: Keys, trace: Trace, *, at: int | None = None) -> tuple[Sealed, bytes]:
    """The sealed form of ``trace`` (written at ``at``) and its ``keys`` database entry."""
    data_key = new_data_key()
    fields = PlainFields(
        content=trace.content,
        tags=trace.tags,
        claim_key=trace.claim_key,
        claim_value=trace.claim_value,
        locator=trace.provenance.locator,
    )
    blank = msgspec.structs.replace(
        trace,
        content="",
        tags=(),
        claim_key=None,
        claim_value=None,
        provenance=msgspec.structs.replace(trace.provenance, locator=None),
    )
    sealed = Sealed(
        trace=blank, sealed=seal_fields(data_key, trace.id, fields), key_id=keys.master_id, at=at
    )
    return sealed, wrapped_entry(keys, data_key)


def open_trace(keys: Keys, sealed: Sealed, entry: bytes) -> Trace:
    """The plaintext trace of ``sealed``, given its ``keys`` database entry.

    Raises:
        DecryptionFailed: the entry or the text does not open.
        VaultLocked: the keyring holds no master the entry names.
    """
    wrapped_by, wrapped = split_key_entry(sealed.trace.id, entry)
    return open_with(sealed, unwrap(keys.master_for(wrapped_by), wrapped))


def open_with(sealed: Sealed, data_key: DataKey) -> Trace:
    """The plaintext trace of ``sealed`` under its own data key (another device sent it).

    Raises:
        DecryptionFailed: the text does not open under ``data_key``.
    """
    fields = open_fields(data_key, sealed.trace.id, sealed.sealed)
    blank = sealed.trace
    provenance: Provenance = msgspec.structs.replace(blank.provenance, locator=fields.locator)
    return msgspec.structs.replace(
        blank,
        content=fields.content,
        tags=fields.tags,
        claim_key=fields.claim_key,
        claim_value=fields.claim_value,
        provenance=provenance,
    )


def wrapped_entry(keys: Keys, data_key: DataKey) -> bytes:
    """The ``keys`` database entry of a data key another device sent: wrapped under this
    device's current master, like the keys of its own traces."""
    return key_entry(keys.master_id, wrap(keys.master, data_key))


def data_key_of(keys: Keys, trace_id: str, entry: bytes) -> DataKey:
    """The data key a ``keys`` database entry wraps (to send it to a paired device).

    Raises:
        DecryptionFailed, VaultLocked: the entry does not open.
    """
    wrapped_by, wrapped = split_key_entry(trace_id, entry)
    return unwrap(keys.master_for(wrapped_by), wrapped)


def seal_file(keys: Keys, plaintext: bytes, *, aad: bytes) -> tuple[bytes, bytes]:
    """A file's bytes sealed under a fresh data key, and that key's entry (wrapped by the
    current master) to keep beside them: each save of a file gets a key of its own."""
    data_key = new_data_key()
    return seal(data_key, plaintext, aad=aad), wrapped_entry(keys, data_key)


def open_file(keys: Keys, sealed: bytes, entry: bytes, *, aad: bytes) -> bytes:
    """The plaintext :func:`seal_file` sealed.

    Raises:
        DecryptionFailed: the entry or the bytes do not open.
        VaultLocked: the keyring holds no master the entry names.
    """
    return open_sealed(data_key_of(keys, "a sealed file", entry), sealed, aad=aad)


def rewrapped(keys: Keys, trace_id: str, entry: bytes) -> bytes | None:
    """``entry`` re-wrapped under the current master; None when it already is."""
    wrapped_by, wrapped = split_key_entry(trace_id, entry)
    if wrapped_by == keys.master_id:
        return None
    return key_entry(keys.master_id, rewrap(keys.master_for(wrapped_by), keys.master, wrapped))


def key_entry(master_id: str, wrapped: bytes) -> bytes:
    return master_id.encode("ascii") + wrapped


def split_key_entry(trace_id: str, entry: bytes) -> tuple[str, bytes]:
    if len(entry) != KEY_ENTRY_BYTES:
        raise DecryptionFailed(f"the stored data key of {trace_id} is damaged")
    return entry[:KEY_ID_HEX].decode("ascii", "replace"), entry[KEY_ID_HEX:]


# Terms are Zipfian: most blinds of a write or a query are of words seen before.
# The cache is process memory, where the index key lives anyway.
_blind = functools.lru_cache(maxsize=1 << 16)(blind)


def blind_term(keys: Keys, term: str) -> str:
    """An index term as the vault's postings hold it."""
    return _blind(keys.index, term)


def blind_claim(keys: Keys, key: str) -> str:
    """A normalised claim key as the vault's claims index holds it."""
    return _blind(keys.index, key, domain="claim-key")


def blind_claim_value(keys: Keys, value: str) -> str:
    """A normalised claim value: equal values still compare equal, and nothing more."""
    return _blind(keys.index, value, domain="claim-value")


@dataclass(frozen=True)
class HeldKeys:
    """Keys held in memory, for tools and tests that bring their own (the daemon
    takes its keys from the keyring: ``hikmahd.keys.VaultKeys``)."""

    master: MasterKey = field(default_factory=new_master_key)
    index: IndexKey = field(default_factory=new_index_key)
    retiring: Mapping[str, MasterKey] = field(default_factory=dict)

    @property
    def master_id(self) -> str:
        return key_id(self.master)

    @property
    def index_id(self) -> str:
        return key_id(self.index)

    def master_for(self, wrapped_by: str) -> MasterKey:
        if wrapped_by == self.master_id:
            return self.master
        if wrapped_by in self.retiring:
            return self.retiring[wrapped_by]
        raise VaultLocked(f"no master key {wrapped_by}")

    def rotated(self) -> HeldKeys:
        """A new current master, this one retiring."""
        return HeldKeys(index=self.index, retiring={self.master_id: self.master})

    def loader(self) -> Callable[[str], HeldKeys]:
        return lambda _vault_id: self
