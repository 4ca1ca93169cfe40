"""Real stores pairing through a real folder: by a code used once, spreading the roster
and every chain, refusing a key that is not the device's."""

from __future__ import annotations

from pathlib import Path

import pytest

from hikmah.index import fates, queries
from hikmah.model.errors import ConflictError, NotFound
from hikmah.store import maintenance
from hikmah.sync.pairing import DEFAULT_LIFETIME_MS

from .nodes import Node, replicas_of, same_memory, settle


def test_pairing_by_code_spreads_the_roster_and_every_chain(
    trio_of: tuple[Node, Node, Node],
) -> None:
    laptop, desk, _box = trio_of
    for node in trio_of:
        assert set(replicas_of(node)) == {n.id for n in trio_of} - {node.id}
    notes = {node.name: node.remember(f"{node.name} keeps the build green") for node in trio_of}
    settle(*trio_of)
    assert same_memory(*trio_of)
    assert set(laptop.active()) == set(notes.values())
    for node in trio_of:
        report = maintenance.verify(node.store)
        assert report.ok, report.errors
        # Each other device's chain as kept here ends at that device's own head.
        others = sorted((n for n in trio_of if n is not node), key=lambda n: n.id)
        assert [(c.device, c.name, c.ok) for c in report.devices] == [
            (n.id, n.name, True) for n in others
        ]
        for chain, other in zip(report.devices, others, strict=True):
            own = maintenance.verify(other.store)
            assert (chain.records, chain.head) == (own.records, own.head)
    # The origin of each trace is the device that wrote it.
    with desk.store.snapshot() as snapshot:
        assert queries.origin(snapshot, notes["laptop"]) == (laptop.id, False, "laptop")
        assert queries.origin(snapshot, notes["desk"]) == (desk.id, True, None)
        # Read once for many (recall's results): the same answers.
        here = fates.this_device(snapshot)
        assert here == desk.id
        assert queries.origin(snapshot, notes["laptop"], here) == (laptop.id, False, "laptop")
        assert queries.origin(snapshot, notes["desk"], here) == (desk.id, True, None)


def test_a_code_opens_nothing_in_another_folder_and_is_used_once(tmp_path: Path) -> None:
    laptop = Node(tmp_path / "d", tmp_path / "f", "laptop")
    desk = Node(tmp_path / "d", tmp_path / "f", "desk")
    stranger = Node(tmp_path / "d", tmp_path / "f", "stranger")
    elsewhere = Node(tmp_path / "d", tmp_path / "g", "elsewhere")
    code = laptop.invite()
    with pytest.raises(NotFound):
        elsewhere.join(code)
    desk.join(code)
    stranger.join(code)  # someone else who saw the code
    findings = laptop.sync()
    paired = set(replicas_of(laptop)) & {desk.id, stranger.id}
    assert len(paired) == 1
    (winner,) = paired
    assert any(f"already used by device {winner}" in f for f in findings)
    # Once used, the invitation says so until it expires: the code typed again (on
    # another device, or by the one that lost) is told it was used, and by whom.
    late = Node(tmp_path / "d", tmp_path / "f", "late")
    with pytest.raises(ConflictError, match=f"already used: device {winner} joined with it"):
        late.join(code)
    # Expired, it leaves the folder: nobody finds it any more.
    laptop.now += DEFAULT_LIFETIME_MS
    laptop.sync()
    with pytest.raises(NotFound):
        late.join(code)
    for node in (laptop, desk, stranger, elsewhere, late):
        node.close()


def test_a_pair_is_refused_for_a_key_that_is_not_the_ids(tmp_path: Path) -> None:
    from hikmah.model.errors import InvalidInput
    from hikmah.rules.operations import Pair
    from hikmah.sync.device import DeviceKey

    node = Node(tmp_path / "d", tmp_path / "f", "n")
    other, impostor = DeviceKey.generate(), DeviceKey.generate()
    (outcome,) = node.apply(Pair(device=other.device_id, key=impostor.public.raw, name="x"))
    assert isinstance(outcome, InvalidInput)
    (outcome,) = node.apply(Pair(device=node.id, key=node.key.public.raw, name="me"))
    assert isinstance(outcome, ConflictError)
    node.close()
