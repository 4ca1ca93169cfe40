"""Real stores syncing through a real folder, as the daemon drives them but without it.

A :class:`Node` is one data directory with a device key; :meth:`Node.sync` runs
one exchange the way the daemon's syncing service does (look, pair, apply,
publish), calling the store directly instead of through the writer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from hikmah.index import queries, replicas
from hikmah.model.errors import ConflictError, HikmahError
from hikmah.model.policy import KernelPolicy
from hikmah.model.trace import Draft
from hikmah.rules.operations import Applied, Operation, Outcome, Remember, Written
from hikmah.store import exchange
from hikmah.store.core import Store
from hikmah.store.exchange import Identity, Look
from hikmah.sync.device import DeviceKey
from hikmah.sync.envelope import PrekeyPair
from hikmah.sync.pairing import PairingCode, invite, join
from hikmah.vault.sealing import Keys

NOW = 1_790_000_000_000
POLICY = KernelPolicy()


@dataclass
class Node:
    """One device: a store in its own data directory, its key, the shared folder."""

    root: Path
    folder: Path
    name: str
    vault: Keys | None = None
    key: DeviceKey = field(default_factory=DeviceKey.generate)
    prekeys: tuple[PrekeyPair, ...] = ()
    now: int = NOW
    store: Store = field(init=False)

    def __post_init__(self) -> None:
        self.open()

    def open(self) -> None:
        keys = self.vault
        self.store = Store(
            self.root / self.name,
            map_size=1 << 24,
            vault=None if keys is None else (lambda _vault_id: keys),
        )
        with self.store.transaction() as snapshot:
            replicas.set_device(snapshot, self.key.device_id)
        if keys is not None and not self.prekeys:
            self.prekeys = (PrekeyPair.generate(),)

    @property
    def id(self) -> str:
        return self.key.device_id

    @property
    def identity(self) -> Identity:
        return Identity(self.key, self.name, self.prekeys)

    def close(self) -> None:
        self.store.close()

    def reopen(self) -> None:
        self.store.close()
        self.open()

    def apply(self, *operations: Operation) -> list[Outcome]:
        self.now += 1
        return self.store.apply(list(operations), now_ms=self.now, policy=POLICY)

    def write(self, *operations: Operation) -> list[Written]:
        written = []
        for outcome in self.apply(*operations):
            if isinstance(outcome, HikmahError):
                raise outcome
            assert isinstance(outcome, Written)
            written.append(outcome)
        return written

    def remember(self, content: str, **fields: object) -> str:
        draft = Draft(content=content, **fields)  # type: ignore[arg-type]
        return self.write(Remember(draft=draft))[0].id

    def look(self) -> Look:
        with self.store.snapshot() as snapshot:
            return exchange.look(snapshot, self.folder, self.identity, self.store.head, self.now)

    def publish(self) -> None:
        with self.store.snapshot() as snapshot:
            found = self.look().manifests
            made = exchange.publication(
                snapshot, self.folder, self.identity, self.store.head, found, self.now
            )
        if made.publish is not None:
            with self.store.transaction() as snapshot:
                replicas.put_published(snapshot, made.publish.published)
            self.store.sync()
        exchange.write(self.folder, self.id, made)

    def sync(self) -> list[str]:
        """One exchange: pair, apply, publish. The findings, as 'device: problem: why'."""
        found = self.look()
        if found.ahead is not None:
            with self.store.transaction() as snapshot:
                replicas.take_back(snapshot, list(found.take_back))
                replicas.put_ahead(snapshot, None if found.take_back else found.ahead)
            self.store.sync()
        for pair, used in found.pairs:
            self.write(pair)
            with self.store.transaction() as snapshot:
                kept = [i for i in replicas.invitations(snapshot) if i.invite_id != used.invite_id]
                replicas.put_invitations(snapshot, [*kept, used])
        outcomes = self.apply(*found.steps) if found.steps else []
        for outcome in outcomes:
            assert isinstance(outcome, Applied | ConflictError), outcome
        self.publish()
        return [f"{f.device}: {f.problem}: {f.why}" for f in found.findings]

    def invite(self) -> PairingCode:
        opened, data = invite(self.key, name=self.name, now_ms=self.now)
        with self.store.transaction() as snapshot:
            replicas.put_invitations(snapshot, [*replicas.invitations(snapshot), opened])
        exchange.write_file(self.folder, self.id, f"invite-{opened.invite_id}", data)
        self.publish()
        return opened.code

    def join(self, code: PairingCode) -> None:
        invitation = exchange.find_invitation(self.folder, code)
        data = join(
            self.key,
            code,
            invitation,
            name=self.name,
            now_ms=self.now,
            vault=self.vault is not None,
            prekeys=tuple(p.public for p in self.prekeys),
        )
        from hikmah.rules.operations import Pair

        self.write(Pair(device=invitation.inviter, key=invitation.key, name=invitation.name))
        exchange.write_file(self.folder, self.id, f"join-{invitation.invite_id}", data)
        self.publish()

    # -- what a person sees -----------------------------------------------------------

    def active(self) -> dict[str, str]:
        with self.store.snapshot() as snapshot:
            return {
                t.trace.id: t.trace.content
                for t in queries.traces(snapshot, include_inactive=False)
            }

    def statuses(self) -> dict[str, str]:
        """Every trace's status, purged ones included."""
        with self.store.snapshot() as snapshot:
            return {
                snapshot.bare_trace_at(docno).id: snapshot.status_of(docno)
                for docno, _value in snapshot.documents()
            }

    def conflicts(self) -> list[object]:
        return [c for c in self.store.read(queries.conflicts)]

    def queue(self) -> list[tuple[int | None, str]]:
        return [(t.trace.deadline, t.trace.id) for t in self.store.read(queries.commitments)]

    def view(self) -> tuple[object, ...]:
        return (self.active(), self.statuses(), self.conflicts(), self.queue())


def pair_all(*nodes: Node) -> None:
    """Pair every node with the first, by code, then let the roster spread."""
    first = nodes[0]
    for other in nodes[1:]:
        code = first.invite()
        other.join(code)
        first.sync()
        other.sync()
    settle(*nodes)


def settle(*nodes: Node, rounds: int = 4, check: Callable[[], bool] | None = None) -> None:
    for _ in range(rounds):
        for node in nodes:
            node.sync()
        if check is not None and check():
            return


def same_memory(*nodes: Node) -> bool:
    first = nodes[0].view()
    return all(node.view() == first for node in nodes[1:])


def replicas_of(node: Node) -> dict[str, object]:
    with node.store.snapshot() as snapshot:
        return dict(replicas.peers(snapshot))
