"""Real stores syncing through a real folder: a purge anywhere is a purge everywhere (text,
segments and data keys), and a removed device counts up to its cutoff."""

from __future__ import annotations

from pathlib import Path

import pytest

from hikmah.index import queries, replicas
from hikmah.index.layout import decode_redaction
from hikmah.model.errors import ConflictError
from hikmah.rules.operations import Purge, RemoveDevice
from hikmah.store import maintenance
from hikmah.sync.folder import DEVICES
from hikmah.vault.sealing import HeldKeys

from .nodes import Node, pair_all, same_memory, settle


def test_a_purge_anywhere_purges_everywhere_and_compaction_leaves_no_text(
    trio_of: tuple[Node, Node, Node],
) -> None:
    laptop, desk, box = trio_of
    secret = laptop.remember("the door code is tamarind-fjord")
    laptop.remember("the plant needs water on fridays")
    settle(*trio_of)
    desk.write(Purge(id=secret, reason="asked to forget"))
    settle(*trio_of)
    assert same_memory(*trio_of)
    assert all(node.statuses()[secret] == "purged" for node in trio_of)
    # The paired devices' copies of the laptop's record are redacted at once.
    for node in (desk, box):
        with node.store.snapshot() as snapshot:
            kept = [v for _s, v in replicas.chain(snapshot, laptop.id)]
        assert not any(b"tamarind" in v for v in kept)
        assert any(decode_redaction(v) is not None for v in kept)
    # The laptop's own ledger and its published segments hold the text until it compacts.
    folder_bytes = lambda: b"".join(  # noqa: E731
        p.read_bytes() for p in (laptop.folder / DEVICES / laptop.id).rglob("*.seg")
    )
    assert b"tamarind" in folder_bytes()
    # The box purges another of the laptop's traces; the desk receives the laptop's
    # compacted chain before the box's purge: the redaction alone purges it there.
    other = laptop.remember("the safe code is ocelot-quasar")
    settle(*trio_of)
    box.write(Purge(id=other, reason="also forget this"))
    box.sync()
    laptop.sync()
    maintenance.compact(laptop.store, laptop.now)
    laptop.sync()
    hidden = laptop.folder / DEVICES / box.id
    hidden.rename(hidden.with_name("elsewhere"))
    desk.sync()
    hidden.with_name("elsewhere").rename(hidden)
    assert desk.statuses()[other] == "purged"
    with desk.store.snapshot() as snapshot:
        assert all(b"ocelot" not in v for _k, v in snapshot.txn.cursor(db=snapshot.dbs.chains))
    settle(*trio_of)
    assert b"tamarind" not in folder_bytes() and b"ocelot" not in folder_bytes()
    assert same_memory(*trio_of)
    for node in trio_of:
        report = maintenance.verify(node.store)
        assert report.ok, report.errors
        with node.store.snapshot() as snapshot:
            assert all(
                b"tamarind" not in v for _k, v in snapshot.txn.cursor(db=snapshot.dbs.chains)
            )


def test_a_removed_device_counts_up_to_the_cutoff_everywhere(
    trio_of: tuple[Node, Node, Node],
) -> None:
    laptop, desk, box = trio_of
    kept = box.remember("the box wrote this before it was lost")
    settle(*trio_of)
    laptop.write(RemoveDevice(device=box.id))
    late = box.remember("written after the removal")  # the lost box goes on writing
    box.sync()
    desk.sync()  # the desk applies it before it hears of the removal ...
    assert late in desk.active()
    settle(*trio_of)
    for node in (laptop, desk):  # ... and forgets it once it does
        assert kept in node.active() and late not in node.active()
    assert same_memory(laptop, desk)
    with box.store.snapshot() as snapshot:
        assert replicas.removed_by(snapshot) == laptop.id
    with desk.store.snapshot() as snapshot:
        assert [s for s, _v in replicas.chain(snapshot, box.id)][-1] < len(
            list(box.store.read(lambda snap: list(snap.records())))
        )
    report = maintenance.verify(desk.store)
    assert report.ok
    removed = {c.device: c.removed_at for c in report.devices}
    assert removed[laptop.id] is None and removed[box.id] is not None
    with pytest.raises(ConflictError):
        laptop.write(RemoveDevice(device=box.id))


def test_vaults_send_data_keys_in_envelopes_and_a_purge_destroys_them_everywhere(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "folder"
    laptop = Node(tmp_path / "d", folder, "laptop", vault=HeldKeys())
    desk = Node(tmp_path / "d", folder, "desk", vault=HeldKeys())
    plain = Node(tmp_path / "d", folder, "plain")  # no vault here
    pair_all(laptop, desk, plain)
    note = laptop.remember("the lichen grows on the north wall")
    secret = laptop.remember("diagnosis: bramble syndrome")
    settle(laptop, desk, plain)
    with desk.store.snapshot() as snapshot:
        assert queries.get(snapshot, note).trace.content == "the lichen grows on the north wall"
        assert snapshot.txn.get(secret.encode(), db=snapshot.dbs.keys) is not None
    # The device without the vault keeps the sealed traces without their text, hidden.
    assert note not in plain.active()
    everything = b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file())
    assert b"lichen" not in everything and b"bramble" not in everything
    desk.write(Purge(id=secret, reason="forget it"))
    settle(laptop, desk, plain)
    for node in (laptop, desk):
        assert node.statuses()[secret] == "purged"
        with node.store.snapshot() as snapshot:
            assert snapshot.txn.get(secret.encode(), db=snapshot.dbs.keys) is None
    for node in (laptop, desk, plain):
        node.close()
