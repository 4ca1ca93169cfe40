"""The person's signature across devices: with presence on, a copy of a device's files
(its key included) cannot make a record that passes as its person's anywhere."""

from __future__ import annotations

import shutil
from pathlib import Path

import msgspec
import pytest

from hikmah.access.person import PersonKey, attest, attestation, grant, new_salt
from hikmah.access.presence import hash_passphrase
from hikmah.index import replicas
from hikmah.model.errors import HikmahError
from hikmah.model.trace import Draft
from hikmah.rules.operations import Operation, Pair, Purge, Remember, SetPresence
from hikmah.sync.device import DeviceKey
from hikmah.sync.pairing import invite

from .nodes import POLICY, Node, settle

PASSPHRASE = "correct horse battery"


def signed(node: Node, person: PersonKey | None, *operations: Operation) -> list[str]:
    """Write as the daemon does for a person who proved presence (``person``: their key)."""
    node.now += 1
    outcomes = node.store.apply(
        list(operations), now_ms=node.now, policy=POLICY, persons=[person] * len(operations)
    )
    for outcome in outcomes:
        if isinstance(outcome, HikmahError):
            raise outcome
    return [o.id for o in outcomes]  # type: ignore[union-attr]


def turn_on(node: Node, passphrase: str = PASSPHRASE, old: PersonKey | None = None) -> PersonKey:
    """``passphrase set`` (or ``change``, signed by ``old``), as the daemon writes it."""
    salt = new_salt()
    key = PersonKey.derive(passphrase, salt)
    action = "set" if old is None else "change"
    operation = SetPresence(
        action=action, hash=hash_passphrase(passphrase), key=key.public, salt=salt
    )
    signed(node, key if old is None else old, operation)
    return key


def verified(content: str) -> Remember:
    return Remember(draft=Draft(content=content, verified=True, source="human:sam"))


def copy_of(node: Node, root: Path) -> Node:
    """A second data directory made by copying ``node``'s files (its device key too)."""
    node.store.close()
    shutil.copytree(node.root / node.name, root / node.name)
    node.open()
    return Node(root, node.folder, node.name, key=node.key, now=node.now)


def halted(node: Node, device: str) -> str:
    with node.store.snapshot() as snapshot:
        entry = replicas.paired(snapshot, device)
    assert entry is not None
    return entry.peer.halted or ""


def test_the_attestation_signs_exactly_the_payload_before_it() -> None:
    key = PersonKey.derive(PASSPHRASE, b"s" * 16)
    payload = b'{"type":"purge","id":"tr_1","reason":"a \\",\\"person\\":{\\"key\\":\\" trick"}'
    sealed = attest(key, payload)
    found = attestation(sealed)
    assert found is not None and found.signed == payload and found.by(key.public)
    assert not found.by(PersonKey.derive("another passphrase", b"s" * 16).public)
    assert attestation(sealed.replace(b"tr_1", b"tr_2")) is not None
    assert not attestation(sealed.replace(b"tr_1", b"tr_2")).by(key.public)  # type: ignore[union-attr]
    assert attestation(payload) is None
    # The same passphrase with another salt is another key; the same salt, the same key.
    assert PersonKey.derive(PASSPHRASE, b"s" * 16).public == key.public
    assert PersonKey.derive(PASSPHRASE, b"t" * 16).public != key.public


def test_a_persons_records_pass_and_a_copys_are_refused_where_presence_is_on(
    two: tuple[Node, Node], tmp_path: Path
) -> None:
    laptop, desk = two
    person = turn_on(laptop)
    mine = signed(laptop, person, verified("deploys need two reviewers"))[0]
    settle(laptop, desk)
    assert mine in desk.active() and not halted(desk, laptop.id)
    # An agent copies the laptop's data directory, device key included, and writes
    # through the copy: it has no passphrase, so no person key.
    copy = copy_of(laptop, tmp_path / "copy")
    forged = signed(copy, None, verified("Always deploy on Fridays"))[0]
    copy.publish()
    findings = desk.sync()
    assert forged not in desk.active()
    assert "without the signature of" in halted(desk, laptop.id), findings
    assert any("halted" in finding for finding in desk.sync())
    copy.close()


@pytest.mark.parametrize("how", ["purge", "remove presence", "reset then set"])
def test_a_copy_cannot_purge_or_turn_presence_off_or_replace_the_key(
    two: tuple[Node, Node], tmp_path: Path, how: str
) -> None:
    laptop, desk = two
    person = turn_on(laptop)
    kept = signed(laptop, person, verified("the on-call rota is in the wiki"))[0]
    settle(laptop, desk)
    copy = copy_of(laptop, tmp_path / "copy")
    if how == "purge":
        signed(copy, None, Purge(id=kept, reason="cleanup"))
        expected = "a purge without the signature"
    elif how == "remove presence":
        signed(copy, None, SetPresence(action="remove"))
        expected = "presence without its person's signature"
    else:  # hikmahd --reset-passphrase on the copy, then a passphrase of the agent's own
        signed(copy, None, SetPresence(action="reset"))
        own = turn_on(copy, "the agent's own passphrase")
        signed(copy, own, verified("Always deploy on Fridays"))
        expected = "passphrase was reset without the old one"
    copy.publish()
    desk.sync()
    assert expected in halted(desk, laptop.id)
    assert kept in desk.active() and "Always deploy on Fridays" not in desk.active().values()
    copy.close()


def test_a_change_of_passphrase_signed_by_the_old_key_carries_trust_to_the_new(
    two: tuple[Node, Node],
) -> None:
    laptop, desk = two
    old = turn_on(laptop)
    new = turn_on(laptop, "a newer longer passphrase", old=old)
    after = signed(laptop, new, verified("signed with the new key"))[0]
    settle(laptop, desk)
    assert after in desk.active() and not halted(desk, laptop.id)
    with desk.store.snapshot() as snapshot:
        entry = replicas.paired(snapshot, laptop.id)
    assert entry is not None and entry.peer.person == new.public


def test_a_join_adds_a_device_with_the_grant_of_its_invitation_once(
    two: tuple[Node, Node], tmp_path: Path
) -> None:
    laptop, desk = two
    person = turn_on(laptop)
    settle(laptop, desk)
    # sync invite with presence on: the person's grant is kept with the invitation, and
    # the record that adds the joiner (written when its request arrives) carries it.
    opened, data = invite(laptop.key, name=laptop.name, now_ms=laptop.now)
    opened = msgspec.structs.replace(opened, grant=grant(person, laptop.id, opened.invite_id))
    with laptop.store.transaction() as snapshot:
        replicas.put_invitations(snapshot, [*replicas.invitations(snapshot), opened])
    from hikmah.store import exchange

    exchange.write_file(laptop.folder, laptop.id, f"invite-{opened.invite_id}", data)
    laptop.publish()
    box = Node(tmp_path / "d", laptop.folder, "box")
    box.join(opened.code)
    settle(laptop, desk, box)
    with desk.store.snapshot() as snapshot:
        assert replicas.paired(snapshot, box.id) is not None
    assert not halted(desk, laptop.id)
    # A copy replays that grant to add a device of the agent's: refused.
    copy = copy_of(laptop, tmp_path / "copy")
    stranger = DeviceKey.generate()
    replay = Pair(device=stranger.device_id, key=stranger.public.raw, name="agent",
                  invite=opened.invite_id, grant=opened.grant)  # fmt: skip
    signed(copy, None, replay)
    copy.publish()
    desk.sync()
    assert "a change of who is paired without the signature" in halted(desk, laptop.id)
    box.close()
    copy.close()


def test_with_presence_off_a_copy_of_a_device_acts_as_it(
    two: tuple[Node, Node], tmp_path: Path
) -> None:
    # What docs/security.md says presence off cannot give: nothing tells the copy apart.
    laptop, desk = two
    copy = copy_of(laptop, tmp_path / "copy")
    forged = signed(copy, None, verified("Always deploy on Fridays"))[0]
    copy.publish()
    desk.sync()
    assert forged in desk.active() and not halted(desk, laptop.id)
    copy.close()


def test_two_writers_under_one_device_id_halt_it_on_every_peer(
    two: tuple[Node, Node], tmp_path: Path
) -> None:
    laptop, desk = two
    copy = copy_of(laptop, tmp_path / "copy")
    laptop.remember("written on the laptop itself")
    forged = copy.remember("written through the copy")
    copy.publish()
    desk.sync()
    assert forged in desk.active()  # presence off: the copy's record is taken at first
    # The laptop sees its chain in the folder is not its ledger's, says so, and publishes
    # its own; the desk, which took the copy's record at that seq, sees two histories.
    assert any(f.startswith(f"{laptop.id}: fork: the folder holds a chain") for f in laptop.sync())
    assert any(f.startswith(f"{laptop.id}: fork:") for f in desk.sync())
    copy.close()
