"""The semantic channel in recall and in the store: the default model's real vectors
(all-MiniLM-L6-v2), a real LMDB.

Fusion under the same gates (visibility, folding, the relevance gate), the
default weighting, the reference policy reproducing the reference exactly,
stable ranking, and the vectors following every write in the background,
surviving in their file and rebuilt when they cannot be used.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import msgspec
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hikmah.index.past import as_of
from hikmah.index.snapshot import Snapshot
from hikmah.model.paths import model_cache_dir
from hikmah.model.policy import KernelPolicy, SemanticPolicy, parse_policy, reference_policy
from hikmah.model.recall import RecallQuery, RecallResult
from hikmah.model.trace import Draft
from hikmah.recall.ranking import recall
from hikmah.rules.operations import Purge, Remember
from hikmah.semantic.models import Loaded, load_model
from hikmah.semantic.store_vectors import EMBED_SLICE, SemanticIndex
from hikmah.semantic.vector_file import StaleVectors, vectors_path
from hikmah.store.core import Store
from hikmah.store.indexing import rebuild_index
from hikmah.store.vectors import open_vectors
from hikmah.vault.sealing import HeldKeys
from tests.harness.store import NOW, remember, remember_forecast, write

from .strategies import examples, notes_of, query_of

AWS = "The AWS bill jumped 40% in October because the staging cluster was left running."
PAGER = "Page the on-call DBA when Postgres stops accepting connections."
SPENDING = "why did our cloud spending go up"  # shares no term with AWS; cosine 0.42
DEFAULT = KernelPolicy()
OFF = msgspec.structs.replace(DEFAULT, semantic=SemanticPolicy(enabled=False))
_counter = itertools.count()


@pytest.fixture(scope="module")
def model() -> Loaded:
    return load_model("minilm", model_cache_dir())


@pytest.fixture
def vstore(tmp_path: Path, model: Loaded) -> Iterator[Store]:
    with Store(tmp_path / "data", map_size=1 << 24) as store:
        open_vectors(store, model, ann_at=DEFAULT.semantic.ann_at)
        yield store


def caught_up(store: Store) -> None:
    """Embed what the vectors are behind on (the daemon does it in the background)."""
    assert store.semantic is not None
    while store.semantic.follow(store.snapshot):
        pass


def ask(
    store: Store, query: str, policy: KernelPolicy = DEFAULT, **kw: object
) -> list[RecallResult]:
    if store.semantic is not None:
        caught_up(store)
    return store.read(
        recall,
        RecallQuery(query=query, **kw),
        now_ms=NOW,
        policy=policy,
        vectors=store.semantic,
    )


def contents(results: list[RecallResult]) -> list[str]:
    return [r.trace.content for r in results]


# ---------------------------------------------------------------- recall


def test_a_paraphrase_is_found_by_meaning_and_why_shows_it(vstore: Store) -> None:
    remember(vstore, AWS, source="human:sam")
    remember(vstore, "Rotate the signing keys every quarter.")
    assert ask(vstore, SPENDING, OFF) == []  # no shared term: the lexical channel finds nothing
    (found,) = ask(vstore, SPENDING)
    assert found.trace.content == AWS
    why = found.why
    blend = DEFAULT.semantic.blend("minilm")
    assert why.matched_terms == [] and why.lexical == 0.0
    assert why.semantic is not None and why.semantic >= max(blend.alone, blend.topic)
    part = (why.semantic - blend.floor) / (blend.full - blend.floor)
    assert why.semantic_part == pytest.approx(part, abs=1e-6)
    assert found.cue == pytest.approx(blend.weight * part, abs=1e-6)
    assert found.score == pytest.approx(found.cue * (0.55 + 0.45 * found.meta), abs=1e-6)


def test_an_unrelated_question_finds_nothing(vstore: Store) -> None:
    remember(vstore, AWS)
    remember(vstore, PAGER)
    for question in ("rules of cricket", "how do I repot an orchid", "recipe for banana bread"):
        assert ask(vstore, question) == []


def test_the_semantic_part_reorders_lexical_matches(vstore: Store) -> None:
    remember(vstore, "The cluster bill for October is in the finance folder.", now=NOW)
    remember(vstore, AWS, now=NOW - 1)
    ranked = ask(vstore, "october cluster bill jumped")
    assert all(r.why.semantic is not None for r in ranked)
    assert ranked[0].trace.content == AWS  # it matches three terms and means the question


def test_semantic_matches_follow_every_visibility_rule(tmp_path: Path, model: Loaded) -> None:
    # Each of these shares no term with SPENDING and is near enough (cosine 0.40-0.46)
    # to be found on meaning alone: only the rules keep the hidden ones out.
    correction = "The AWS bill rose 40% in October: staging ran all month."
    policy = parse_policy("allow_sensitive_persistence = true\n[vault]\nenabled = true")
    with Store(tmp_path / "d", vault=HeldKeys().loader()) as store:
        open_vectors(store, model, ann_at=1000)
        old = remember(store, AWS)
        remember(store, correction, supersedes=old.id)
        secret = "The AWS bill jumped 40% in October because staging was left running overnight."
        store.apply(
            [Remember(draft=Draft(content=secret, privacy="sensitive"))], now_ms=NOW, policy=policy
        )
        remember(
            store,
            "AWS costs jumped 40% in October because the staging cluster was left running.",
            scope="project:other",
        )
        purged = remember(
            store, "The AWS bill jumped in October: a staging cluster was never shut down."
        )
        write(store, Purge(id=purged.id, reason="test"))
        forecast = remember_forecast(
            store, "Our cloud spending will go up again in November if staging keeps running."
        )
        found = ask(store, SPENDING, policy, scope="project:mine")
        assert contents(found) == [correction]
        assert found[0].why.matched_terms == [] and found[0].why.semantic is not None

        # Each flag brings back exactly what it names, found on meaning alone too.
        def brought(**flags: object) -> set[str]:
            again = ask(store, SPENDING, policy, scope="project:mine", **flags)
            return {r.trace.content for r in again} - {correction}

        assert brought(include_superseded=True) == {AWS}
        assert brought(include_sensitive=True) == {secret}
        assert brought(kinds=("prediction",)) == {forecast.content}
        assert {r.trace.scope for r in ask(store, SPENDING, policy)} == {"global", "project:other"}
        assert purged.id not in {
            r.trace.id
            for r in ask(store, SPENDING, policy, include_superseded=True, include_sensitive=True)
        }


def test_semantic_matches_fold_and_contradicting_claims_never_do(vstore: Store) -> None:
    remember(vstore, AWS, now=NOW)
    remember(vstore, AWS + " ", now=NOW - 1)  # the same text: folded
    remember(
        vstore,
        "The cloud bill went up 40% in October.",
        claim_key="cloud.bill",
        claim_value="up 40%",
    )
    remember(
        vstore,
        "The cloud bill went up 40% in October.",
        claim_key="cloud.bill",
        claim_value="up 4%",
    )
    found = ask(vstore, SPENDING)
    aws = [r for r in found if r.trace.content.startswith("The AWS")]
    assert len(aws) == 1 and aws[0].duplicates == 1
    claims = [r for r in found if r.trace.claim_key == "cloud.bill"]
    assert len(claims) == 2 and all(r.duplicates == 0 for r in claims)


def test_the_agent_hooks_stay_quiet_on_semantics_alone(vstore: Store) -> None:
    remember(vstore, AWS)
    assert ask(vstore, SPENDING, min_matched_terms=2) == []
    assert len(ask(vstore, SPENDING)) == 1


def test_tags_alone_and_stopwords_alone_are_as_before(vstore: Store) -> None:
    remember(vstore, AWS, tags=("cost",))
    (tagged,) = ask(vstore, "", tags=("cost",))
    assert tagged.why.semantic is None and tagged.cue == 1.0
    assert ask(vstore, "the of and") == []


def scores(results: list[RecallResult]) -> list[tuple[object, ...]]:
    return [(r.trace.content, r.score, r.cue, r.meta, r.duplicates, r.why) for r in results]


def test_reference_policy_ignores_the_channel_exactly(
    tmp_path: Path, vstore: Store, model: Loaded
) -> None:
    notes = [AWS, PAGER, "October bill review on Friday", "Staging cluster left running"]
    with Store(tmp_path / "plain", map_size=1 << 24) as plain:
        for store in (vstore, plain):
            write(
                store,
                *(
                    Remember(draft=Draft(content=n), created_at=NOW - i)
                    for i, n in enumerate(notes)
                ),
            )
        reference = reference_policy()
        for query in ("october bill", "staging cluster running", SPENDING):
            with_vectors = ask(vstore, query, reference)
            assert scores(with_vectors) == scores(ask(plain, query, reference))
            assert all(
                r.why.semantic is None and r.why.weighting == "reference" for r in with_vectors
            )


def test_idf_cosine_ranks_a_rare_identifier_above_common_words(vstore: Store) -> None:
    for i in range(30):
        remember(vstore, f"keep the build green and fail fast {i}", now=NOW - 10 - i)
    remember(vstore, "test_invoice_pdf_render is flaky on CI", now=NOW - 5)
    query = "keep failing test_invoice_pdf_render"
    assert contents(ask(vstore, query, OFF))[0] == "test_invoice_pdf_render is flaky on CI"
    reference = ask(vstore, query, reference_policy())
    assert reference[0].trace.content.startswith("keep the build green")  # what IDF fixes


FILLER = ["deploy", "cache", "token", "replica", "friday", "kafka", "schema", "lease"]
WORDS = [
    "deploy",
    "cache",
    "billing",
    "token",
    "replica",
    "friday",
    "kafka",
    "schema",
    "lease",
    "bill",
    "cloud",
    "spending",
]


@examples(30)
@given(
    notes=notes_of(WORDS, longest=6, most=40),
    query=query_of(WORDS),
    depth=st.integers(2, 12),
    semantic=st.booleans(),
)
def test_the_top_k_is_the_start_of_the_top_k_plus_one(
    tmp_path: Path,
    model: Loaded,
    notes: list[list[str]],
    query: list[str],
    depth: int,
    semantic: bool,
) -> None:
    policy = msgspec.structs.replace(
        DEFAULT if semantic else reference_policy(), recall_limit=depth
    )
    with Store(tmp_path / f"s{next(_counter)}", map_size=1 << 22) as store:
        open_vectors(store, model, ann_at=1000)
        write(
            store,
            *(
                Remember(draft=Draft(content=" ".join(n)), created_at=NOW - i)
                for i, n in enumerate(notes)
            ),
        )
        text = " ".join(query)
        longest = ask(store, text, policy, limit=depth)
        for limit in range(1, depth):
            assert ask(store, text, policy, limit=limit) == longest[:limit]
        assert [r.score for r in longest] == sorted((r.score for r in longest), reverse=True)


# ---------------------------------------------------------------- the vectors


def status(store: Store) -> tuple[str, int, int, int]:
    assert store.semantic is not None
    s = store.semantic.status()
    return s.state, s.vectors, s.documents, s.behind


def test_vectors_follow_writes_in_the_background_and_purges_at_once(vstore: Store) -> None:
    assert status(vstore) == ("ready", 0, 0, 0)
    kept = remember(vstore, AWS)
    gone = remember(vstore, PAGER)
    # The writes did not wait for the model: their vectors are behind ...
    assert status(vstore) == ("ready", 0, 2, 2)
    (found,) = vstore.read(
        recall, RecallQuery(query="postgres"), now_ms=NOW, policy=DEFAULT, vectors=vstore.semantic
    )
    assert found.trace.id == gone.id and found.why.semantic is None  # ... judged by words
    caught_up(vstore)
    assert status(vstore) == ("ready", 2, 2, 0)
    write(vstore, Purge(id=gone.id, reason="test"))
    assert status(vstore)[1] == 1  # a purged text's vector goes with the commit
    assert vstore.semantic is not None
    sims = vstore.semantic.similarities(vstore.semantic.embed_query("postgres"), [0, 1])
    assert not np.isnan(sims[0]) and np.isnan(sims[1])
    assert ask(vstore, SPENDING)[0].trace.id == kept.id


def test_a_long_text_is_as_near_as_its_nearest_passage(vstore: Store) -> None:
    filler = "We talked about the weather, the garden and the neighbour's new car. " * 40
    long = filler + "My daily commute to work takes 45 minutes each way. " + filler
    remember(vstore, long)
    remember(vstore, "Lunch with the team is on Thursdays.")
    caught_up(vstore)
    held = vstore.semantic.status() if vstore.semantic else None
    assert held is not None and held.vectors > 3  # the long text's windows, and the note
    (found, *_) = ask(vstore, "how long is my commute")
    assert found.trace.content == long.strip() and found.why.semantic is not None
    assert vstore.semantic is not None
    embedder = vstore.semantic.embedder
    whole = float(embedder.embed([long])[0] @ embedder.embed_query("how long is my commute"))
    assert found.why.semantic > whole + 0.1  # the window holding it, not the whole text


def test_a_rewrite_while_being_embedded_is_embedded_again(vstore: Store) -> None:
    assert vstore.semantic is not None
    semantic = vstore.semantic
    old = remember(vstore, AWS)
    original = vstore.snapshot

    def snapshot_after_a_rewrite():  # type: ignore[no-untyped-def]
        # The document is chosen; before its text is read, a purge rewrites it.
        write(vstore, Purge(id=old.id, reason="test"))
        return original()

    assert semantic.follow(snapshot_after_a_rewrite) == 1
    assert semantic.status().vectors == 0  # the purged text was read: nothing held
    remember(vstore, PAGER)
    caught_up(vstore)
    assert semantic.status().vectors == 1 and semantic.status().behind == 0


def test_an_interrupt_ends_embedding_within_a_slice_and_leaves_the_rest_behind(
    vstore: Store,
) -> None:
    assert vstore.semantic is not None
    semantic = vstore.semantic
    long = "We talked about the weather, the garden and the neighbour's new car. " * 200
    for n in range(3):
        remember(vstore, f"note {n}: {long}")
    slices = []
    embed = semantic.embedder.embed

    def embed_then_interrupt(texts):  # type: ignore[no-untyped-def]
        slices.append(len(texts))
        semantic.interrupt()  # the daemon stops while the first slice is embedded
        return embed(texts)

    semantic.embedder.embed = embed_then_interrupt  # type: ignore[method-assign]
    try:
        assert semantic.follow(vstore.snapshot) == 0
    finally:
        del semantic.embedder.embed
    assert slices == [EMBED_SLICE]  # far fewer than the batch's passages
    assert status(vstore) == ("ready", 0, 3, 3)  # nothing held, all still behind
    assert semantic.follow(vstore.snapshot) == 0  # and a stopping daemon embeds no more


def test_the_file_is_loaded_and_caught_up_and_refused_when_it_does_not_fit(
    tmp_path: Path, model: Loaded
) -> None:
    data = tmp_path / "data"
    with Store(data, map_size=1 << 24) as store:
        semantic = open_vectors(store, model, ann_at=1000)
        remember(store, AWS)
        caught_up(store)
        remember(store, "a third note, behind when the file is saved")
        semantic.save(None)
        remember(store, PAGER)  # after the save: caught up on the next open
    with Store(data, map_size=1 << 24) as store:
        reopened = SemanticIndex(vectors_path(data), model.embedder, model=model.name, ann_at=1000)
        store.semantic = reopened
        with store.snapshot() as snapshot:
            reopened.open(snapshot, None)
        held = reopened.status()
        assert (held.state, held.vectors, held.documents, held.behind) == ("ready", 1, 3, 2)
        caught_up(store)
        assert reopened.status().vectors == 3
        # Another model's vectors are not used.
        other = load_model("wordllama", None)
        with store.snapshot() as snapshot, pytest.raises(StaleVectors, match="the model is"):
            SemanticIndex(vectors_path(data), other.embedder, model="wordllama", ann_at=1000).load(
                snapshot, None
            )
    # A store that lost the commits the file had seen reuses their numbers.
    with Store(tmp_path / "other", map_size=1 << 24) as store:
        remember(store, "something else entirely")
        vectors_path(data).rename(vectors_path(tmp_path / "other"))
        opened = SemanticIndex(
            vectors_path(tmp_path / "other"), model.embedder, model=model.name, ann_at=1000
        )
        with store.snapshot() as snapshot, pytest.raises(StaleVectors, match="does not hold"):
            opened.load(snapshot, None)
        open_vectors(store, model, ann_at=1000)  # and so they are built again
        assert status(store) == ("ready", 1, 1, 0)


def test_an_old_vector_file_is_built_again(tmp_path: Path, model: Loaded) -> None:
    data = tmp_path / "data"
    with Store(data, map_size=1 << 24) as store:
        remember(store, AWS)
        vectors_path(data).write_bytes(b"..." + b"HIKMAH-VECTORS-2")
        open_vectors(store, model, ann_at=1000)
        assert status(store) == ("ready", 1, 1, 0)


def test_rebuilding_the_indexes_rebuilds_the_vectors(vstore: Store) -> None:
    remember(vstore, AWS)
    caught_up(vstore)
    assert vstore.semantic is not None
    vstore.semantic.save(None)
    rebuild_index(vstore)
    assert not vectors_path(vstore.data_dir).exists()
    assert status(vstore)[0] == "loading"
    assert ask(vstore, SPENDING) == []  # lexical only until they are made again
    with vstore.snapshot() as snapshot:
        vstore.semantic.open(snapshot, None)
    assert status(vstore) == ("building", 0, 1, 1)
    assert len(ask(vstore, SPENDING)) == 1
    assert status(vstore) == ("ready", 1, 1, 0)


def test_past_ann_at_the_graph_serves_and_loses_purged_vectors(
    tmp_path: Path, model: Loaded
) -> None:
    with Store(tmp_path / "d", map_size=1 << 24) as store:
        semantic = open_vectors(store, model, ann_at=20)
        written = write(
            store,
            *(
                Remember(draft=Draft(content=f"note {i} about the {w} service"))
                for i, w in enumerate(FILLER * 4)
            ),
        )
        aws = remember(store, AWS)
        caught_up(store)
        while semantic.wants_fold():
            semantic.fold(slice_size=7)
        folded = semantic.status()
        assert folded.graph > 0 and folded.vectors - folded.graph < 20  # recent stays small
        assert ask(store, SPENDING)[0].trace.id == aws.id
        write(store, Purge(id=aws.id, reason="test"), Purge(id=written[0].id, reason="test"))
        assert all(r.trace.id != aws.id for r in ask(store, SPENDING + " service", limit=8))
        semantic.save(None)
        reopened = SemanticIndex(
            vectors_path(store.data_dir), model.embedder, model=model.name, ann_at=20
        )
        with store.snapshot() as snapshot:
            reopened.load(snapshot, None)
        assert reopened.status().vectors == semantic.status().vectors == len(written) - 1


def test_recall_as_of_the_past_finds_by_meaning_what_was_true_then(vstore: Store) -> None:
    old = remember(vstore, AWS)
    correction = "The AWS bill rose 40% in October: staging ran all month."
    remember(vstore, correction, supersedes=old.id)
    later = remember(vstore, "Our AWS spending jumped 40% in October.")
    caught_up(vstore)
    vectors = vstore.semantic
    with vstore.snapshot() as snapshot:
        then = as_of(snapshot, 1, NOW)  # after the first write only
        found = recall(
            then, RecallQuery(query=SPENDING), now_ms=NOW, policy=DEFAULT, vectors=vectors
        )
        now = recall(
            snapshot, RecallQuery(query=SPENDING), now_ms=NOW, policy=DEFAULT, vectors=vectors
        )
    # As of record 1 the first note was active, and nothing written since is seen.
    assert [r.trace.id for r in found] == [old.id] and found[0].status == "active"
    assert found[0].why.semantic is not None
    assert old.id not in {r.trace.id for r in now} and later.id in {r.trace.id for r in now}


def test_the_query_is_embedded_beside_the_lexical_work(
    vstore: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    remember(vstore, AWS)
    caught_up(vstore)
    events: list[str] = []
    original = Snapshot.postings

    def postings(self: Snapshot, term: str) -> object:
        events.append("postings")
        return original(self, term)

    def embed(index: SemanticIndex, text: str):  # type: ignore[no-untyped-def]
        events.append("start")
        vector = index.embed_query(text)

        def wait():  # type: ignore[no-untyped-def]
            events.append("wait")
            return vector

        return wait

    monkeypatch.setattr(Snapshot, "postings", postings)
    found = vstore.read(
        recall,
        RecallQuery(query="aws bill"),
        now_ms=NOW,
        policy=DEFAULT,
        vectors=vstore.semantic,
        embed=embed,
    )
    assert [r.trace.content for r in found] == [AWS] and found[0].why.semantic is not None
    # Started before the lexical candidates are gathered, waited for after.
    assert events[0] == "start" and events[-1] == "wait" and "postings" in events[1:-1]
