"""Chains of real ledger records and devices that publish them into a folder.

The records are made by :func:`hikmah.ledger.chain.encode_record` over payloads of the
shape the store writes; :class:`Device` runs the planner's publish into a real
directory (the daemon will do the same with hikmah.model.durable's atomic replace).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from hikmah.ledger.chain import GENESIS, Record, encode_record
from hikmah.model.head import Head
from hikmah.sync.chain import START, Position
from hikmah.sync.device import DeviceKey
from hikmah.sync.folder import DEVICES, read_file, scan, write_own
from hikmah.sync.manifest import decode_manifest
from hikmah.sync.plan import Announce, Peer, Published, audit, plan_apply, plan_publish

NOW = 1_790_000_000_000


def remember_payload(trace_id: str, content: str = "a note", **fields: object) -> bytes:
    trace = {"id": trace_id, "kind": "observation", "content": content, "created_at": NOW}
    trace.update(fields)
    return msgspec.json.encode({"type": "remember", "trace": trace})


def chain(payloads: Iterable[bytes], after: list[Record] | None = None) -> list[Record]:
    """Records continuing ``after`` (or from genesis) with ``payloads``."""
    records = list(after or [])
    for payload in payloads:
        prev = records[-1].hash if records else GENESIS
        records.append(encode_record(len(records) + 1, prev, payload))
    return records


def notes(count: int, prefix: str = "t", after: list[Record] | None = None) -> list[Record]:
    start = len(after or [])
    return chain((remember_payload(f"{prefix}{start + i}") for i in range(count)), after)


@dataclass
class Device:
    """One device: its key, its own ledger (records), what it published and applied."""

    folder: Path
    name: str
    key: DeviceKey = field(default_factory=DeviceKey.generate)
    records: list[Record] = field(default_factory=list)
    epoch: int = 1
    published: Published | None = None
    peers: dict[str, Peer] = field(default_factory=dict)
    stored: dict[str, dict[int, bytes]] = field(default_factory=dict)
    segment_bytes: int = 1 << 20

    @property
    def id(self) -> str:
        return self.key.device_id

    @property
    def root(self) -> Path:
        return self.folder / DEVICES / self.id

    def write(self, count: int = 1) -> None:
        self.records = notes(count, prefix=f"{self.name}-", after=self.records)

    def head(self) -> Head:
        if not self.records:
            return Head(seq=0, hash=GENESIS)
        return Head(seq=self.records[-1].seq, hash=self.records[-1].hash)

    def pair(self, *others: Device) -> None:
        for other in others:
            self.peers.setdefault(other.id, Peer(key=other.key.public.raw))

    def publish(self) -> bool:
        """One publish into the folder; whether anything was written."""
        own = scan(self.folder).get(self.id)
        generation = 0
        data = read_file(self.folder, self.id, "manifest")
        if data is not None:
            generation = decode_manifest(data, self.id).manifest.generation
        plan = plan_publish(
            self.key,
            epoch=self.epoch,
            head=self.head(),
            announce=Announce(name=self.name),
            published=self.published,
            own=own,
            folder_generation=generation,
            records_from=lambda seq: self.records[seq - 1 :],
            segment_bytes=self.segment_bytes,
        )
        if plan is None:
            return False
        self.published = plan.published  # kept before the files are written
        write_own(self.folder, self.id, plan.writes, plan.removes)
        return True

    def apply(self) -> list[str]:
        """One look at the folder: apply every step; the findings as 'device: problem'."""
        plan = plan_apply(
            self.id,
            self.peers,
            scan(self.folder),
            lambda device, name: read_file(self.folder, device, name),
            lambda device, seq: self.stored.get(device, {}).get(seq),
        )
        for step in plan.steps:
            kept = self.stored.setdefault(step.device, {})
            for record in step.records:
                kept[record.seq] = record.line
            peer = self.peers[step.device]
            self.peers[step.device] = msgspec.structs.replace(
                peer, applied=step.position, accepted=step.accepted
            )
        return [f"{f.device}: {f.problem}: {f.why}" for f in plan.findings]

    def audit(self) -> list[str]:
        """The whole folder checked: findings as 'device: problem: why'."""
        keys = {device: peer.key for device, peer in self.peers.items()}
        keys[self.id] = self.key.public.raw
        own = {r.seq: r.line for r in self.records}
        found = audit(
            self.id,
            keys,
            scan(self.folder),
            lambda device, name: read_file(self.folder, device, name),
            lambda device, seq: (
                own.get(seq) if device == self.id else self.stored.get(device, {}).get(seq)
            ),
        )
        return [f"{f.device}: {f.problem}: {f.why}" for f in found]

    def applied(self, other: Device) -> Position:
        return self.peers[other.id].applied if other.id in self.peers else START

    def lines_of(self, other: Device) -> list[bytes]:
        kept = self.stored.get(other.id, {})
        return [kept[seq] for seq in sorted(kept)]
