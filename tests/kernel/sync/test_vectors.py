"""The semantic channel across synced devices: traces that arrive from another device get
their vectors on the same path as local writes, a purge anywhere removes them everywhere,
and devices that hold the same records recall the same, whatever order they came in."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from hikmah.model.paths import model_cache_dir
from hikmah.model.policy import KernelPolicy
from hikmah.model.recall import RecallQuery
from hikmah.recall.ranking import recall
from hikmah.rules.operations import Purge
from hikmah.semantic.models import Loaded, load_model
from hikmah.store.indexing import rebuild_index
from hikmah.store.vectors import open_vectors

from .nodes import NOW, Node, pair_all, settle

POLICY = KernelPolicy()
NOTES = (
    "The AWS bill jumped 40% in October because the staging cluster was left running.",
    "When Postgres stops accepting connections, fail over to the replica in eu-west.",
    "No production changes between December 20 and January 3.",
    "Rotate the signing keys every quarter and record the fingerprint.",
    "The mobile build takes twenty minutes because of the asset pipeline.",
    "Sam prefers reviews on Tuesday mornings, before standup.",
    "Our cloud costs doubled after the analytics team enabled hourly exports.",
    "The primary database failed over twice last week during the backup window.",
)
QUESTIONS = (
    "why did our cloud spending go up",  # shares no term with its answers
    "what to do when the primary database is down",
    "can I deploy during the holidays",
    "signing keys",
    "build pipeline minutes",
)


@pytest.fixture(scope="module")
def model() -> Loaded:
    return load_model("minilm", model_cache_dir())


def with_vectors(node: Node, model: Loaded) -> Node:
    open_vectors(node.store, model, ann_at=POLICY.semantic.ann_at)
    return node


def caught_up(node: Node) -> None:
    """Embed what the vectors are behind on (the daemon does it in the background)."""
    semantic = node.store.semantic
    assert semantic is not None
    while semantic.follow(node.store.snapshot):
        pass


def answers(node: Node) -> list[list[tuple[str, float, float | None]]]:
    """Each question's results as a person sees them: trace, score, similarity."""
    caught_up(node)
    out = []
    for question in QUESTIONS:
        found = node.store.read(
            recall,
            RecallQuery(query=question),
            now_ms=NOW,
            policy=POLICY,
            vectors=node.store.semantic,
        )
        out.append([(r.trace.id, r.score, r.why.semantic) for r in found])
    return out


def held(node: Node) -> int:
    caught_up(node)
    assert node.store.semantic is not None and node.store.semantic.ready
    return node.store.semantic.status().vectors


def test_vectors_follow_records_from_other_devices_in_any_order(
    tmp_path: Path, model: Loaded
) -> None:
    rng = random.Random(17)
    folder = tmp_path / "folder"
    nodes = [with_vectors(Node(tmp_path / "d", folder, n), model) for n in ("a", "b", "c")]
    pair_all(*nodes)
    ids: list[str] = []
    for round_, note in enumerate(NOTES):
        # Each device writes some of the notes and syncs at its own moments, so each
        # receives the others' records in an order of its own.
        writer = nodes[round_ % 3]
        ids.append(writer.remember(note))
        for node in rng.sample(nodes, rng.randint(0, 3)):
            node.sync()
    settle(*nodes, rounds=1)  # b and c see the traces they change; then they change them
    fixed = nodes[1].remember("Rotate the signing keys every month.", supersedes=ids[3])
    nodes[2].write(Purge(id=ids[4], reason="wrong"))
    settle(*nodes)

    orders = [[t for t, _s in node.statuses().items()] for node in nodes]
    assert len({tuple(o) for o in orders}) > 1, "the devices should hold different orders"
    first = answers(nodes[0])
    assert all(answers(node) == first for node in nodes[1:])
    # Every device's vectors hold every trace with text: 9 remembered, 1 purged (the
    # superseded one keeps its vector: recall filters it like a lexical match).
    assert [held(node) for node in nodes] == [8, 8, 8]
    # A device finds another device's trace by meaning alone: b finds a's AWS note,
    # which shares no term with the question.
    store = nodes[1].store
    found = store.read(
        recall, RecallQuery(query=QUESTIONS[0]), now_ms=NOW, policy=POLICY, vectors=store.semantic
    )
    (aws,) = [r for r in found if r.trace.id == ids[0]]
    assert aws.why.matched_terms == [] and aws.why.semantic is not None
    # The correction (b's) hides the trace it corrects (a's) everywhere.
    assert [t for t, _s, _m in first[3]] == [fixed]
    assert ids[4] not in {t for a in first for t, _s, _m in a}  # purged on c

    # Vectors built afresh from the store (a new model, a lost file) agree too.
    rebuild_index(nodes[2].store)
    assert nodes[2].store.semantic is not None and not nodes[2].store.semantic.serving
    with nodes[2].store.snapshot() as snapshot:
        nodes[2].store.semantic.open(snapshot, None)
    assert answers(nodes[2]) == first
    for node in nodes:
        node.close()


def test_a_record_arriving_while_the_vectors_load_is_embedded_once_they_serve(
    tmp_path: Path, model: Loaded
) -> None:
    folder = tmp_path / "folder"
    laptop = with_vectors(Node(tmp_path / "d", folder, "laptop"), model)
    desk = Node(tmp_path / "d", folder, "desk")
    pair_all(laptop, desk)
    laptop.remember(NOTES[0])
    laptop.sync()
    desk.sync()
    # The desk's channel starts loading; a record arrives before it has read its file.
    semantic = open_vectors(desk.store, model, ann_at=POLICY.semantic.ann_at)
    semantic.rebuild()
    laptop.remember(NOTES[6])
    laptop.sync()
    desk.sync()
    assert not semantic.serving
    with desk.store.snapshot() as snapshot:
        semantic.open(snapshot, None)
    assert held(desk) == 2
    assert answers(desk) == answers(laptop)
    laptop.close()
    desk.close()
