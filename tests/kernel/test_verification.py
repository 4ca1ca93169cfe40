"""Verifying in bulk: which traces a person can vouch for, and the verified copy that
supersedes each, written through the ordinary rules of a real store."""

from __future__ import annotations

from hikmah.access.principal import AgentSession
from hikmah.index import queries
from hikmah.model.errors import AgentRestricted
from hikmah.model.policy import KernelPolicy
from hikmah.model.trace import Draft
from hikmah.rules.operations import Remember
from hikmah.rules.verification import selection_digest, verifiable, verification
from hikmah.store.core import Store
from tests.harness.store import DAY, NOW, remember, write

AGENT = AgentSession(host="codex", session_id="s1", variables=("CODEX_THREAD_ID",))


def test_only_unverified_active_claims_of_the_source_are_chosen(store: Store) -> None:
    rule = remember(store, "Never push to main", kind="constraint", source="tool:claude-md",
                    scope="project:/src/shop", tags=("rules",))  # fmt: skip
    note = remember(store, "Ana lives in Porto", source="tool:claude-md")
    remember(store, "Checked already", source="tool:claude-md", verified=True)
    remember(store, "From elsewhere", source="tool:mem0")
    task = remember(store, "Renew the certificate", kind="commitment", source="tool:claude-md")
    done = Remember(draft=Draft(content="Renewed", kind="outcome", fulfills=task.id,
                                source="tool:claude-md"))  # fmt: skip
    write(store, done)
    old = remember(store, "Old rule", source="tool:claude-md")
    remember(store, "New rule", source="tool:claude-md", supersedes=old.id)
    traces = store.read(lambda s: [e.trace for e in queries.traces(s, include_inactive=False)])

    chosen = verifiable(traces, source="tool:claude-md", scope=None, kinds=())
    assert [t.content for t in chosen] == ["Never push to main", "Ana lives in Porto", "New rule"]
    assert verifiable(traces, source="tool:claude-md", scope="project:/src/shop", kinds=()) == [
        rule
    ]
    assert verifiable(traces, source="tool:claude-md", scope=None, kinds=("observation",))[0] == (
        note
    )
    assert selection_digest(chosen) == selection_digest(reversed(chosen))
    assert selection_digest(chosen) != selection_digest(chosen[1:])
    assert task.id not in {t.id for t in chosen}  # fulfilled: no longer active


def test_the_verified_copy_keeps_the_claim_and_supersedes_it(store: Store) -> None:
    imported = remember(
        store, "The API runs on port 8080", kind="belief", source="tool:mem0",
        locator="/home/ana/mem0.json#memory=7", claim_key="api port", claim_value="8080",
        scope="person:ana", tags=("ops",), confidence=0.7, now=NOW - 30 * DAY,
    )  # fmt: skip
    (done,) = write(store, verification(imported, None))
    copy = done.trace
    assert copy is not None and copy.provenance.verified
    assert copy.supersedes == imported.id
    same = ("kind", "content", "tags", "claim_key", "claim_value", "scope", "confidence",
            "created_at", "privacy", "salience")  # fmt: skip
    assert all(getattr(copy, f) == getattr(imported, f) for f in same)
    assert (copy.provenance.source, copy.provenance.locator) == (
        "tool:mem0",
        "/home/ana/mem0.json#memory=7",
    )
    assert store.read(queries.get, imported.id).status == "superseded"
    # The same verification again is refused (its trace is superseded), and its copy's id
    # is the one already written: nothing twice.
    again = verification(imported, None)
    (refused,) = store.apply([again], now_ms=NOW, policy=KernelPolicy())
    assert getattr(refused, "reason", None) == "conflict" and "is superseded" in str(refused)
    assert again.trace_id == copy.id


def test_an_agent_s_stamp_leaves_the_locator_and_an_agent_never_verifies(store: Store) -> None:
    (stamped,) = write(store, Remember(draft=Draft(content="Use pnpm", kind="preference",
                       source="tool:claude-md", locator="/src/shop/CLAUDE.md:9"), session=AGENT))  # fmt: skip
    trace = stamped.trace
    assert trace is not None
    assert trace.provenance.locator == "agent-session:codex:s1; /src/shop/CLAUDE.md:9"
    (mine,) = write(store, verification(trace, None))
    assert mine.trace is not None and mine.trace.provenance.locator == "/src/shop/CLAUDE.md:9"

    (bare,) = write(store, Remember(draft=Draft(content="Use tabs"), session=AGENT))
    assert bare.trace is not None
    unnamed = verification(bare.trace, None)
    assert unnamed.draft.locator is None
    (refused,) = store.apply([verification(bare.trace, AGENT)], now_ms=NOW, policy=KernelPolicy())
    assert isinstance(refused, AgentRestricted)
    assert store.read(queries.get, bare.trace.id).status == "active"
