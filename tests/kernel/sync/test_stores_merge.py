"""Real stores syncing through a real folder: the union of records, the same memory whatever
the order (the merge fold's), pins as an observed-remove set, indexes rebuilt the same."""

from __future__ import annotations

import random
from pathlib import Path

from hikmah.index import queries, replicas
from hikmah.index.derived import derived_databases
from hikmah.index.fates import parse_record_name, this_device
from hikmah.index.layout import decode_redaction
from hikmah.index.past import as_of
from hikmah.ledger.payloads import RememberPayload
from hikmah.model.trace import Trace, normalize_claim_key, normalize_claim_value
from hikmah.rules.operations import Fulfill, Pin, Purge
from hikmah.store.indexing import rebuild_index
from hikmah.sync import merge
from hikmah.sync.merge import RecordId

from .nodes import Node, pair_all, same_memory, settle


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
