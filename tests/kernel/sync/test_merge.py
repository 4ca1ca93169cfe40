"""The merge fold: the same set of facts gives the same memory, whatever the order."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from hikmah.sync.merge import (
    Fact,
    Feedback,
    Fulfilled,
    Pinned,
    Purged,
    RecordId,
    Remembered,
    Superseded,
    fate,
    view,
)

DEVICES = ("hda", "hdb", "hdc")
TRACES = ("t0", "t1", "t2", "t3")


def at(device: str, seq: int) -> RecordId:
    return RecordId(device, seq)


def remembered(trace: str, where: RecordId, **fields: object) -> Remembered:
    return Remembered(
        at=where, trace=trace, digest=f"d-{trace}", kind=fields.pop("kind", "observation"), **fields
    )  # type: ignore[arg-type]


record_ids = st.builds(RecordId, st.sampled_from(DEVICES), st.integers(1, 30))
traces = st.sampled_from(TRACES)
facts: st.SearchStrategy[Fact] = st.one_of(
    st.builds(
        Remembered,
        at=record_ids,
        trace=traces,
        digest=st.sampled_from(["d1", "d2"]),
        kind=st.sampled_from(["observation", "commitment", "prediction"]),
        verified=st.booleans(),
        model=st.booleans(),
        claim_key=st.sampled_from([None, "editor"]),
        claim_value=st.sampled_from(["vim", "emacs"]),
        deadline=st.sampled_from([None, 5, 9]),
        redacted=st.booleans(),
    ),
    st.builds(
        Superseded,
        at=record_ids,
        trace=traces,
        by=traces,
        by_verified=st.booleans(),
        by_model=st.booleans(),
    ),
    st.builds(
        Fulfilled,
        at=record_ids,
        trace=traces,
        by=st.sampled_from([None, "t2"]),
        by_model=st.booleans(),
    ),
    st.builds(Purged, at=record_ids, trace=traces),
    st.builds(
        Pinned,
        at=record_ids,
        trace=traces,
        pinned=st.booleans(),
        overrides=st.frozensets(record_ids, max_size=2),
    ),
    st.builds(Feedback, at=record_ids, trace=traces, good=st.booleans()),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(facts, max_size=25), st.randoms(use_true_random=False))
def test_order_and_duplicates_do_not_matter(found: list[Fact], random: object) -> None:
    shuffled = [*found, *found[: len(found) // 2]]
    random.shuffle(shuffled)  # type: ignore[attr-defined]
    assert view(shuffled) == view(found)


@settings(max_examples=200, deadline=None)
@given(st.lists(facts, max_size=25), st.lists(st.integers(0, 2), max_size=25))
def test_devices_that_saw_the_same_facts_in_any_split_agree(
    found: list[Fact], owners: list[int]
) -> None:
    # Three devices each hold part of the facts; after exchanging, each holds the union
    # in the order it happened to receive them.
    parts: list[list[Fact]] = [[], [], []]
    for index, fact in enumerate(found):
        parts[owners[index] if index < len(owners) else 0].append(fact)
    orders = [
        parts[0] + parts[1] + parts[2],
        parts[2] + parts[0] + parts[1],
        parts[1][::-1] + parts[2] + parts[0],
    ]
    views = [view(order) for order in orders]
    assert views[0] == views[1] == views[2]


def test_a_supersession_that_arrives_before_its_target_waits_for_it() -> None:
    correction = Superseded(at=at("hdb", 2), trace="t0", by="t1", by_verified=False, by_model=False)
    early = fate([correction])
    assert not early.present
    later = fate([correction, remembered("t0", at("hda", 1))])
    assert later.present and later.status == "superseded" and later.successors == ("t1",)


def test_two_devices_superseding_one_trace_both_count_and_their_claims_conflict() -> None:
    facts: list[Fact] = [
        remembered("t0", at("hda", 1), claim_key="editor", claim_value="vim"),
        remembered("t1", at("hda", 2), claim_key="editor", claim_value="emacs"),
        Superseded(at=at("hda", 3), trace="t0", by="t1", by_verified=False, by_model=False),
        remembered("t2", at("hdb", 1), claim_key="editor", claim_value="helix"),
        Superseded(at=at("hdb", 2), trace="t0", by="t2", by_verified=False, by_model=False),
    ]
    seen = view(facts)
    assert seen.fates["t0"].successors == ("t1", "t2")
    assert seen.active == {"t1", "t2"}
    assert [c.key for c in seen.conflicts] == ["editor"]
    assert seen.conflicts[0].values == (("emacs", ("t1",)), ("helix", ("t2",)))


def test_fulfilment_and_purge_of_a_trace_not_yet_seen_take_effect_when_it_arrives() -> None:
    done = Fulfilled(at=at("hdb", 4), trace="t0", by="t9")
    gone = Purged(at=at("hdc", 1), trace="t1")
    commitment = remembered("t0", at("hda", 1), kind="commitment", deadline=5)
    note = remembered("t1", at("hda", 2))
    assert view([done, gone]).active == frozenset()
    seen = view([done, gone, commitment, note])
    assert seen.fates["t0"].status == "fulfilled" and seen.fates["t0"].fulfilled_by == ("t9",)
    assert seen.fates["t1"].status == "purged"
    assert seen.queue == ()
    assert view([commitment]).queue == ((5, "t0"),)


def test_purge_wins_over_everything_and_a_redacted_remember_is_purged() -> None:
    facts: list[Fact] = [
        remembered("t0", at("hda", 1)),
        Superseded(at=at("hdb", 1), trace="t0", by="t1", by_verified=False, by_model=False),
        Purged(at=at("hdc", 1), trace="t0"),
    ]
    assert fate(facts).status == "purged"
    assert fate([remembered("t0", at("hda", 1), redacted=True)]).status == "purged"


def test_supersession_beats_a_concurrent_fulfilment() -> None:
    facts: list[Fact] = [
        remembered("t0", at("hda", 1), kind="commitment", deadline=9),
        Fulfilled(at=at("hdb", 1), trace="t0", by=None),
        Superseded(at=at("hdc", 1), trace="t0", by="t1", by_verified=False, by_model=False),
    ]
    result = fate(facts)
    assert result.status == "superseded" and result.fulfilled_by == (None,)


def test_the_rules_a_receiver_can_check_make_facts_ineffective_everywhere() -> None:
    verified = remembered("t0", at("hda", 1), verified=True)
    unverified = Superseded(at=at("hdb", 1), trace="t0", by="t1", by_verified=False, by_model=False)
    model = Superseded(at=at("hdb", 2), trace="t0", by="t2", by_verified=False, by_model=True)
    result = fate([verified, unverified, model])
    assert result.status == "active" and result.ineffective == (at("hdb", 1), at("hdb", 2))
    person = Superseded(at=at("hdc", 1), trace="t0", by="t3", by_verified=True, by_model=False)
    assert fate([verified, unverified, person]).successors == ("t3",)
    note = remembered("t5", at("hda", 3))
    assert fate([note, Fulfilled(at=at("hdb", 3), trace="t5")]).status == "active"
    forecast = remembered("t6", at("hda", 4), kind="prediction")
    assert (
        fate([forecast, Fulfilled(at=at("hdb", 4), trace="t6", by="o", by_model=True)]).status
        == "active"
    )
    assert fate([forecast, Fulfilled(at=at("hdb", 5), trace="t6", by="o")]).status == "fulfilled"


def test_pins_are_an_observed_remove_set() -> None:
    note = remembered("t0", at("hda", 1))
    pin_a = Pinned(at=at("hda", 2), trace="t0", pinned=True)
    unpin_b_saw_a = Pinned(
        at=at("hdb", 1), trace="t0", pinned=False, overrides=frozenset({at("hda", 2)})
    )
    unpin_b_blind = Pinned(at=at("hdb", 1), trace="t0", pinned=False)
    assert fate([note, pin_a]).pinned
    assert not fate([note, pin_a, unpin_b_saw_a]).pinned
    assert fate([note, pin_a, unpin_b_blind]).pinned  # concurrent: the pin stays
    unpin_a = Pinned(at=at("hda", 3), trace="t0", pinned=False)
    assert not fate([note, pin_a, unpin_a]).pinned  # later in its own chain


def test_feedback_counts_each_record_once() -> None:
    good = Feedback(at=at("hda", 2), trace="t0", good=True)
    bad = Feedback(at=at("hdb", 2), trace="t0", good=False)
    result = fate([remembered("t0", at("hda", 1)), good, good, bad])
    assert (result.good, result.bad) == (1, 1)


def test_the_same_id_written_differently_keeps_the_lowest_record() -> None:
    first = Remembered(at=at("hdb", 7), trace="t0", digest="x", kind="observation")
    second = Remembered(at=at("hda", 9), trace="t0", digest="y", kind="belief")
    same = Remembered(at=at("hdc", 1), trace="t0", digest="y", kind="belief")
    result = fate([first, second, same])
    assert result.trace == second and result.rivals == (at("hdb", 7),)
