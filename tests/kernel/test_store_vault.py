"""The store under the vault: sealed text at rest, blind indexes, purge by key
destruction, rotation, and a store that moves from plain to sealed."""

from __future__ import annotations

from pathlib import Path

import pytest

from hikmah.index import queries
from hikmah.ledger.chain import verify
from hikmah.model.errors import NotFound
from hikmah.model.policy import KernelPolicy
from hikmah.model.recall import RecallQuery
from hikmah.recall.ranking import recall
from hikmah.rules.operations import Purge
from hikmah.store import free_pages, maintenance
from hikmah.store.core import Store
from hikmah.store.indexing import rebuild_index
from hikmah.vault.crypto import DecryptionFailed, VaultLocked
from hikmah.vault.sealing import HeldKeys
from tests.harness.store import NOW, all_traces, remember, write

SECRET_WORDS = ("quokka", "marmalade", "zephyrine", "kestrel-ops", "src/ledger.rs:42")


def every_byte(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file())


def sealed_store(path: Path, keys: HeldKeys) -> Store:
    return Store(path, map_size=1 << 24, vault=keys.loader())


def found(store: Store, text: str) -> list[str]:
    results = store.read(recall, RecallQuery(query=text), policy=KernelPolicy(), now_ms=NOW)
    return [r.trace.id for r in results]


def wrapped_key(store: Store, trace_id: str) -> bytes:
    """The trace's wrapped data key as stored (after its master's key id)."""
    with store.snapshot() as snapshot:
        return bytes(snapshot.txn.get(trace_id.encode(), db=store.dbs.keys))[16:]


def populate(store: Store) -> list[str]:
    a = remember(
        store,
        "the quokka deploys marmalade on fridays",
        tags=("zephyrine",),
        claim_key="kestrel-ops",
        claim_value="blue",
        locator="src/ledger.rs:42",
    )
    b = remember(store, "the quokka prefers green", claim_key="kestrel-ops", claim_value="green")
    return [a.id, b.id]


def test_sealed_traces_read_back_in_plaintext_and_nothing_plain_reaches_disk(
    tmp_path: Path,
) -> None:
    keys = HeldKeys()
    with sealed_store(tmp_path / "d", keys) as store:
        a, b = populate(store)
        entry = store.read(queries.get, a)
        assert entry.trace.content == "the quokka deploys marmalade on fridays"
        assert entry.trace.tags == ("zephyrine",)
        assert entry.trace.provenance.locator == "src/ledger.rs:42"
        assert set(found(store, "quokka marmalade")) >= {a}
        assert [g.key for g in store.read(queries.conflicts)] == ["kestrel-ops"]
        assert [v.value for v in store.read(queries.conflicts)[0].values] == ["blue", "green"]
        assert [t.trace.id for t in all_traces(store)] == [a, b]
        assert maintenance.verify(store).ok
    data = every_byte(tmp_path / "d")
    for word in SECRET_WORDS:
        assert word.encode() not in data, word


def test_the_chain_covers_ciphertext_and_key_id_and_verifies_without_keys(tmp_path: Path) -> None:
    keys = HeldKeys()
    with sealed_store(tmp_path / "d", keys) as store:
        populate(store)
        with store.snapshot() as snapshot:
            rows = list(snapshot.records())
        head = store.head
    # The chain checks out on the bytes alone, with no key in reach.
    assert verify(rows, head).ok
    first = rows[0][1].decode()
    assert '"type":"sealed"' in first
    assert f'"key_id":"{keys.master_id}"' in first
    assert "quokka" not in first


def test_a_sealed_store_will_not_open_without_its_keys_or_with_wrong_ones(
    tmp_path: Path,
) -> None:
    keys = HeldKeys()
    with sealed_store(tmp_path / "d", keys) as store:
        (a, _b) = populate(store)
    with pytest.raises(VaultLocked, match="vault is off"):
        Store(tmp_path / "d", map_size=1 << 24)
    # Another master that claims the same id: the wrapped keys do not open.
    forged = HeldKeys(index=keys.index)
    impostor = HeldKeys(index=keys.index, retiring={keys.master_id: forged.master})
    with sealed_store(tmp_path / "d", impostor) as store, pytest.raises(DecryptionFailed):
        store.read(queries.get, a)
    with sealed_store(tmp_path / "d", keys) as store:
        assert store.read(queries.get, a).trace.tags == ("zephyrine",)


def test_another_index_key_rebuilds_the_blind_index(tmp_path: Path) -> None:
    keys = HeldKeys()
    with sealed_store(tmp_path / "d", keys) as store:
        (a, _b) = populate(store)
    renewed = HeldKeys(master=keys.master)
    with sealed_store(tmp_path / "d", renewed) as store:
        assert a in found(store, "marmalade")


def test_purge_destroys_the_data_key_and_leaves_the_chain_verifiable(tmp_path: Path) -> None:
    keys = HeldKeys()
    with sealed_store(tmp_path / "d", keys) as store:
        a, b = populate(store)
        wrapped = wrapped_key(store, a)
        write(store, Purge(id=a, reason="asked to forget"))
        with pytest.raises(NotFound):
            store.read(queries.get, a)
        assert found(store, "marmalade") == []
        assert [t.trace.id for t in all_traces(store)] == [b]
        assert store.read(queries.conflicts) == []
        assert maintenance.verify(store).ok
        rebuild_index(store)
        assert found(store, "marmalade") == []
        assert store.read(queries.get, b).trace.content == "the quokka prefers green"
    # The wrapped key is in no page, free or live: with the master it would open the text.
    assert wrapped not in every_byte(tmp_path / "d")
    with sealed_store(tmp_path / "d", keys) as store:
        assert maintenance.verify(store).ok
        assert [t.trace.id for t in all_traces(store)] == [b]


def test_a_purge_interrupted_before_its_scrub_is_finished_at_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    keys = HeldKeys()
    with sealed_store(tmp_path / "d", keys) as store:
        a, _b = populate(store)
        wrapped = wrapped_key(store, a)
        with monkeypatch.context() as crash:  # the crash: no scrub
            crash.setattr(free_pages, "scrub", lambda store: None)
            write(store, Purge(id=a, reason="asked to forget"))
    assert wrapped in every_byte(tmp_path / "d")  # still in a free page
    with sealed_store(tmp_path / "d", keys):
        pass
    assert wrapped not in every_byte(tmp_path / "d")


def test_rotation_rewraps_every_key_and_the_old_master_is_not_needed(tmp_path: Path) -> None:
    keys = HeldKeys()
    with sealed_store(tmp_path / "d", keys) as store:
        a, b = populate(store)
        with store.snapshot() as snapshot:
            before = [bytes(line) for _seq, line in snapshot.records()]
        rotating = keys.rotated()
        assert maintenance.rotate(store, rotating) == 2
        assert maintenance.rotate(store, rotating) == 0  # resumable: nothing left
        c = remember(store, "written after the rotation about quokka")
        with store.snapshot() as snapshot:
            after = [bytes(line) for _seq, line in snapshot.records()]
    assert after[: len(before)] == before  # payloads are not rewritten
    settled = HeldKeys(master=rotating.master, index=keys.index)
    with sealed_store(tmp_path / "d", settled) as store:
        assert store.read(queries.get, a).trace.tags == ("zephyrine",)
        assert store.read(queries.get, c.id).trace.content.endswith("quokka")
        assert set(found(store, "quokka")) == {a, b, c.id}


def test_enabling_the_vault_on_a_plain_store_seals_new_traces_and_keeps_old_ones(
    tmp_path: Path,
) -> None:
    with Store(tmp_path / "d", map_size=1 << 24) as store:
        old = remember(store, "the quokka plain note", claim_key="colour", claim_value="red")
    keys = HeldKeys()
    with sealed_store(tmp_path / "d", keys) as store:
        new = remember(store, "the quokka sealed note", claim_key="colour", claim_value="blue")
        assert set(found(store, "quokka note")) == {old.id, new.id}
        assert len(store.read(queries.conflicts)) == 1
        assert store.read(queries.get, old.id).trace.content == "the quokka plain note"
    with pytest.raises(VaultLocked):
        Store(tmp_path / "d", map_size=1 << 24)


def test_compaction_redacts_a_purged_sealed_record(tmp_path: Path) -> None:
    keys = HeldKeys()
    with sealed_store(tmp_path / "d", keys) as store:
        a, b = populate(store)
        write(store, Purge(id=a, reason="asked to forget"))
        done = maintenance.compact(store, NOW)
        assert done.redacted == [a]
        assert maintenance.verify(store).ok
        assert store.read(queries.get, b).trace.claim_value == "green"
