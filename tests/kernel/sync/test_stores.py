"""Real stores syncing through a real folder: pairing by code, the union of records, the
same memory whatever the order, deletion everywhere, refusals, removal, a restored backup."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from hikmah.index import fates, queries, replicas
from hikmah.index.derived import derived_databases
from hikmah.index.fates import parse_record_name, this_device
from hikmah.index.layout import chain_key, decode_redaction
from hikmah.index.past import as_of
from hikmah.ledger.chain import encode_record
from hikmah.ledger.payloads import PAYLOAD_ENCODER, RememberPayload
from hikmah.model.errors import ConflictError, NotFound
from hikmah.model.trace import Draft, Provenance, Trace, normalize_claim_key, normalize_claim_value
from hikmah.rules.operations import Fulfill, Pin, Purge, Remember, RemoveDevice
from hikmah.store import maintenance
from hikmah.store.indexing import rebuild_index
from hikmah.sync import merge
from hikmah.sync.folder import DEVICES
from hikmah.sync.merge import RecordId
from hikmah.sync.pairing import DEFAULT_LIFETIME_MS
from hikmah.vault.sealing import HeldKeys

from .nodes import Node, pair_all, settle


@pytest.fixture
def trio_of(tmp_path: Path) -> Iterator[tuple[Node, Node, Node]]:
    """A laptop, a desk and a box, paired by code, sharing one folder."""
    folder = tmp_path / "folder"
    nodes = tuple(Node(tmp_path / "data", folder, name) for name in ("laptop", "desk", "box"))
    pair_all(*nodes)
    try:
        yield nodes  # type: ignore[misc]
    finally:
        for node in nodes:
            node.close()


@pytest.fixture
def two(tmp_path: Path) -> Iterator[tuple[Node, Node]]:
    """A laptop and a desk, paired, sharing one folder."""
    folder = tmp_path / "folder"
    laptop = Node(tmp_path / "d", folder, "laptop")
    desk = Node(tmp_path / "d", folder, "desk")
    pair_all(laptop, desk)
    try:
        yield laptop, desk
    finally:
        laptop.close()
        desk.close()


def same_memory(*nodes: Node) -> bool:
    first = nodes[0].view()
    return all(node.view() == first for node in nodes[1:])


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


def replicas_of(node: Node) -> dict[str, object]:
    with node.store.snapshot() as snapshot:
        return dict(replicas.peers(snapshot))


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


def test_concurrent_writes_corrections_conflicts_and_fulfilment_across_devices(
    trio_of: tuple[Node, Node, Node],
) -> None:
    laptop, desk, box = trio_of
    deploy = laptop.remember("deploys go through the staging cluster first")
    promise = desk.remember("send the release notes", kind="commitment", deadline="+48h")
    settle(*trio_of)
    # A correction on the desk of the laptop's trace, and conflicting claims written at once.
    fix = desk.remember("deploys go through canary first", supersedes=deploy)
    laptop.remember("region is eu-west-1", claim_key="region", claim_value="eu-west-1")
    box.remember("region is us-east-1", claim_key="Region", claim_value="us-east-1")
    # The box reports the desk's commitment done.
    box.write(Fulfill(id=promise))
    settle(*trio_of)
    assert same_memory(*trio_of)
    statuses = laptop.statuses()
    assert statuses[deploy] == "superseded" and statuses[fix] == "active"
    assert statuses[promise] == "fulfilled" and laptop.queue() == []
    (conflict,) = laptop.conflicts()
    assert conflict.key == "region" and len(conflict.values) == 2
    with box.store.snapshot() as snapshot:
        assert queries.get(snapshot, deploy).superseded_by == fix


def test_two_devices_correcting_one_trace_at_once_both_count(
    trio_of: tuple[Node, Node, Node],
) -> None:
    laptop, desk, box = trio_of
    old = box.remember("the cache lives in redis", claim_key="cache", claim_value="redis")
    settle(*trio_of)
    a = laptop.remember(
        "cache is memcached", supersedes=old, claim_key="cache", claim_value="memcached"
    )
    b = desk.remember("cache is valkey", supersedes=old, claim_key="cache", claim_value="valkey")
    settle(*trio_of)
    assert same_memory(*trio_of)
    with box.store.snapshot() as snapshot:
        assert queries.successors(snapshot, old) == tuple(sorted((a, b)))
        assert queries.get(snapshot, old).superseded_by == min(a, b)
    (conflict,) = box.conflicts()
    assert [v.value for v in conflict.values] == ["memcached", "valkey"]


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


def test_an_agent_stamped_trace_stays_unverified_everywhere_and_a_forgery_halts_its_device(
    two: tuple[Node, Node],
) -> None:
    from hikmah.access.principal import AgentSession

    laptop, desk = two
    session = AgentSession(host="claude-code", session_id="s1", variables=("CLAUDECODE",))
    agent = laptop.write(Remember(draft=Draft(content="the agent says so"), session=session))[0].id
    settle(laptop, desk)
    with desk.store.snapshot() as snapshot:
        seen = queries.get(snapshot, agent).trace
    assert not seen.provenance.verified and seen.provenance.locator.startswith("agent-session:")
    # A forged record (verified, with an agent-session locator) appended behind the
    # laptop's back and published is refused by the desk, which halts the laptop's chain.
    forged = Trace(
        id="tr_forged000001",
        kind="observation",
        content="a person verified this",
        created_at=laptop.now,
        provenance=Provenance(verified=True, locator="agent-session:claude-code:s1"),
    )
    with laptop.store.snapshot() as snapshot:
        last = snapshot.last_record()
    assert last is not None
    record = encode_record(
        last.seq + 1, last.hash, PAYLOAD_ENCODER.encode(RememberPayload(trace=forged))
    )
    with laptop.store.env.begin(write=True) as txn:
        txn.put(record.seq.to_bytes(8, "big"), record.line, db=laptop.store.dbs.ledger)
    laptop.store.acknowledge_ledger()  # as if a person accepted the tail without reading it
    laptop.publish()
    desk.sync()
    assert desk.statuses().get(forged.id) is None
    peer = replicas_of(desk)[laptop.id]
    assert "agent session cannot be verified" in (peer.peer.halted or "")  # type: ignore[attr-defined]
    report = maintenance.verify(desk.store)
    assert not report.ok and any("halted" in e for e in report.errors)
    (chain,) = report.devices
    assert chain.device == laptop.id and not chain.ok and chain.stopped is None
    assert "agent session cannot be verified" in (chain.halted or "")
    assert chain.head is not None and chain.head.seq == last.seq  # the forgery never applied
    assert any(f.startswith(f"{laptop.id}: halted") for f in desk.sync())


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


def test_a_chain_changed_in_the_store_is_reported_where_it_stops_verifying(
    two: tuple[Node, Node],
) -> None:
    laptop, desk = two
    for note in ("the ocelot sleeps at noon", "the quasar is far", "the plant wants water"):
        laptop.remember(note)
    settle(laptop, desk)
    with desk.store.snapshot() as snapshot:
        kept = dict(replicas.chain(snapshot, laptop.id))
    middle = sorted(kept)[len(kept) // 2]
    with desk.store.env.begin(write=True) as txn:
        txn.put(
            chain_key(laptop.id, middle),
            kept[middle].replace(b"quasar", b"QUASAR").replace(b"plant", b"PLANT"),
            db=desk.store.dbs.chains,
        )
    report = maintenance.verify(desk.store)
    (chain,) = report.devices
    assert not report.ok and not chain.ok and chain.records == len(kept)
    assert chain.stopped is not None and f"seq {middle} was altered" in chain.stopped
    assert chain.head is not None and chain.head.seq == middle - 1
    assert any(laptop.id in e and chain.stopped in e for e in report.errors)


def test_the_same_records_in_any_order_give_the_same_memory_as_the_merge_fold(
    tmp_path: Path,
) -> None:
    rng = random.Random(21)
    folder = tmp_path / "folder"
    nodes = [Node(tmp_path / "data", folder, name) for name in ("a", "b", "c")]
    pair_all(*nodes)
    ids: list[str] = []
    for round_ in range(6):
        for node in rng.sample(nodes, 3):
            for _ in range(rng.randint(1, 3)):
                action = rng.random()
                active = [t for t, s in node.statuses().items() if s == "active"]
                if action < 0.45 or not active:
                    fields: dict[str, object] = {}
                    if rng.random() < 0.4:
                        fields = {
                            "claim_key": f"k{rng.randint(0, 2)}",
                            "claim_value": f"v{rng.randint(0, 2)}",
                        }
                    if rng.random() < 0.2:
                        fields = {
                            "kind": "commitment",
                            "deadline": str(1_800_000_000_000 + rng.randint(0, 5) * 1000),
                        }
                    ids.append(node.remember(f"{node.name} note {round_} {len(ids)}", **fields))
                elif action < 0.65:
                    node.remember(f"{node.name} corrects", supersedes=rng.choice(active))
                elif action < 0.75:
                    node.write(Purge(id=rng.choice(active), reason="gone"))
                elif action < 0.85:
                    target = rng.choice(active)
                    node.write(Pin(id=target, pinned=rng.random() < 0.6))
                else:
                    dated = [t for t in active if t in {i for _d, i in node.queue()}]
                    if dated:
                        node.write(Fulfill(id=rng.choice(dated)))
            if rng.random() < 0.5:
                node.sync()
    settle(*nodes, rounds=3)
    assert same_memory(*nodes)
    oracle = merge.view(facts_of(nodes[0]))
    assert set(nodes[0].active()) == set(oracle.active)
    assert [
        (c.key, tuple((v.value, tuple(v.ids)) for v in c.values)) for c in nodes[0].conflicts()
    ] == [(c.key, c.values) for c in oracle.conflicts]
    assert nodes[0].queue() == list(oracle.queue)
    # A rebuild from the ledger and the chains gives the same indexes again, byte for
    # byte: every kept record is replayed where it arrived.
    before = derived_bytes(nodes[1])
    rebuild_index(nodes[1].store)
    assert derived_bytes(nodes[1]) == before
    for node in nodes:
        node.close()


def derived_bytes(node: Node) -> list[list[tuple[bytes, bytes]]]:
    with node.store.snapshot() as snapshot:
        return [
            [(bytes(k), bytes(v)) for k, v in snapshot.txn.cursor(db=db)]
            for db in derived_databases(snapshot.dbs)
        ]


def facts_of(node: Node) -> list[merge.Fact]:
    """Every fact of every chain the node holds, read back from the records (the oracle's
    input: derived from nothing the indexes computed)."""
    from hikmah.ledger.chain import decode_record
    from hikmah.ledger.payloads import (
        FulfillPayload,
        PinPayload,
        PurgePayload,
        SupersedePayload,
        decode_payload,
    )

    facts: list[merge.Fact] = []
    traces: dict[str, Trace] = {}
    with node.store.snapshot() as snapshot:
        me = this_device(snapshot)
        chains = [(me, [(s, v) for s, v in snapshot.records()])]
        for device in replicas.peers(snapshot):
            chains.append((device, list(replicas.chain(snapshot, device))))
    for device, lines in chains:
        for seq, line in lines:
            at = RecordId(device, seq)
            redaction = decode_redaction(line)
            if redaction is not None:
                facts.append(
                    merge.Remembered(
                        at=at, trace=redaction.id, digest="", kind=redaction.kind, redacted=True
                    )
                )
                continue
            payload = decode_payload(decode_record(line))
            if isinstance(payload, RememberPayload):
                t = payload.trace
                traces[t.id] = t
                facts.append(
                    merge.Remembered(
                        at=at,
                        trace=t.id,
                        digest=str(hash(line)),
                        kind=t.kind,
                        verified=t.provenance.verified,
                        claim_key=None if t.claim_key is None else normalize_claim_key(t.claim_key),
                        claim_value=None
                        if t.claim_value is None
                        else normalize_claim_value(t.claim_value),
                        deadline=t.deadline,
                    )
                )
            elif isinstance(payload, SupersedePayload):
                by = traces[payload.new_id]
                facts.append(
                    merge.Superseded(
                        at=at,
                        trace=payload.old_id,
                        by=payload.new_id,
                        by_verified=by.provenance.verified,
                        by_model=False,
                    )
                )
            elif isinstance(payload, FulfillPayload):
                facts.append(merge.Fulfilled(at=at, trace=payload.id, by=None))
            elif isinstance(payload, PurgePayload):
                facts.append(merge.Purged(at=at, trace=payload.id))
            elif isinstance(payload, PinPayload):
                overrides = frozenset(
                    found for o in payload.overrides if (found := parse_record_name(o)) is not None
                )
                facts.append(
                    merge.Pinned(
                        at=at, trace=payload.id, pinned=payload.pinned, overrides=overrides
                    )
                )
    return facts


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


def test_a_store_restored_behind_what_it_published_takes_its_records_back(
    two: tuple[Node, Node], tmp_path: Path
) -> None:
    import shutil

    laptop, desk = two
    folder = laptop.folder
    laptop.remember("before the backup")
    laptop.sync()
    laptop.close()
    shutil.copytree(laptop.root / "laptop", tmp_path / "backup")
    laptop.open()
    after = laptop.remember("after the backup")
    laptop.sync()
    desk.sync()
    laptop.close()
    shutil.rmtree(laptop.root / "laptop")
    shutil.copytree(tmp_path / "backup", laptop.root / "laptop")
    laptop.open()
    # While its newest segment is missing from the folder, it cannot take its records
    # back yet: writes wait.
    (tail,) = [p for p in (folder / DEVICES / laptop.id / "e1").iterdir()]
    kept = tail.read_bytes()
    tail.unlink()
    assert any("waiting" in f for f in laptop.sync())
    with pytest.raises(ConflictError, match="published records up to seq"):
        laptop.remember("a write while its own chain is ahead")
    tail.write_bytes(kept)
    laptop.sync()  # takes its published records back, as a tail for a person to accept
    with pytest.raises(ConflictError, match="verify-ledger"):
        laptop.remember("a write before the person looked")
    maintenance.accept_tail(laptop.store)
    assert after in laptop.active()
    laptop.remember("written after accepting")
    settle(laptop, desk)
    assert same_memory(laptop, desk)
    assert maintenance.verify(desk.store).ok


def test_a_tampered_segment_and_a_replayed_old_one_are_refused_and_nothing_is_lost(
    two: tuple[Node, Node],
) -> None:
    laptop, desk = two
    first = laptop.remember("the ocelot sleeps at noon")
    settle(laptop, desk)
    root = laptop.folder / DEVICES / laptop.id
    old = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    laptop.remember("the quasar is far")
    laptop.sync()
    (segment,) = (root / "e1").iterdir()
    good = segment.read_bytes()
    segment.write_bytes(good.replace(b"quasar", b"QUASAR"))
    findings = desk.sync()
    assert any("refused" in f for f in findings)
    assert len(desk.active()) == 1
    segment.write_bytes(good)
    assert desk.sync() == [] and len(desk.active()) == 2
    # An engine restoring yesterday's files: an old manifest and segment.
    for path, data in old.items():
        path.write_bytes(data)
    findings = desk.sync()
    assert any("rolled_back" in f for f in findings) and len(desk.active()) == 2
    laptop.sync()  # the laptop republishes what the folder lost
    settle(laptop, desk)
    assert same_memory(laptop, desk) and first in desk.active()
    assert maintenance.verify(desk.store).ok


def test_pins_from_two_devices_are_an_observed_remove_set(two: tuple[Node, Node]) -> None:
    laptop, desk = two
    note = laptop.remember("pin me")
    settle(laptop, desk)
    laptop.write(Pin(id=note, pinned=True))
    settle(laptop, desk)
    desk.write(Pin(id=note, pinned=False))  # the desk saw the laptop's pin: removes it
    settle(laptop, desk)
    assert not pinned(laptop, note) and not pinned(desk, note)
    laptop.write(Pin(id=note, pinned=True))
    desk.write(Pin(id=note, pinned=False))  # concurrent: the desk had not seen this pin
    settle(laptop, desk)
    assert pinned(laptop, note) and pinned(desk, note)


def pinned(node: Node, trace_id: str) -> bool:
    with node.store.snapshot() as snapshot:
        docno = snapshot.docno(trace_id)
        assert docno is not None
        return bool(snapshot.features["pinned"][docno])


def test_layout_3_rebuilds_an_older_store_and_its_indexes_match(tmp_path: Path) -> None:
    node = Node(tmp_path / "d", tmp_path / "f", "old")
    a = node.remember("one")
    node.remember("two", supersedes=a)
    before = node.view()
    with node.store.transaction() as snapshot:
        from hikmah.index.layout import SEQ

        snapshot.txn.put(b"layout", SEQ.pack(2), db=snapshot.dbs.meta)
        snapshot.txn.drop(snapshot.dbs.origins, delete=False)
    node.reopen()
    assert node.view() == before
    with node.store.snapshot() as snapshot:
        assert snapshot.txn.stat(snapshot.dbs.origins)["entries"] == 2
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


def test_reads_as_of_the_past_see_another_devices_trace_once_it_had_arrived(
    two: tuple[Node, Node],
) -> None:
    laptop, desk = two
    note = laptop.remember("the laptop's note arrives on the desk later")
    own = desk.remember("the desk's own note")
    with desk.store.snapshot() as snapshot:
        before = snapshot.last_record()
    settle(laptop, desk)
    later = desk.remember("written on the desk after the arrival")
    assert before is not None
    with desk.store.snapshot() as snapshot:
        then = as_of(snapshot, before.seq, desk.now)
        assert then.docno(own) is not None and then.docno(note) is None
        now_ = as_of(snapshot, before.seq + 1, desk.now)
        assert now_.docno(later) is not None and now_.docno(note) is not None
