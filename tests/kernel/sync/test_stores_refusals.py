"""Real stores syncing through a real folder: forged, altered, tampered and replayed records
are refused and reported, and a store restored from a backup takes its records back."""

from __future__ import annotations

from pathlib import Path

import pytest

from hikmah.index import queries, replicas
from hikmah.index.layout import chain_key
from hikmah.ledger.chain import encode_record
from hikmah.ledger.payloads import PAYLOAD_ENCODER, RememberPayload
from hikmah.model.errors import ConflictError
from hikmah.model.trace import Draft, Provenance, Trace
from hikmah.rules.operations import Remember
from hikmah.store import maintenance
from hikmah.sync.folder import DEVICES

from .nodes import Node, replicas_of, same_memory, settle


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
