"""The import plan over a real store: a re-import writes nothing, a changed record becomes
a correction, and an import never overrides a person's correction or a purge."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hikmah.index import queries
from hikmah.migration import SOURCES, ImportSourceError, Skip, Write, plan, read
from hikmah.migration.items import Collector, content_version, item_trace_id, make_item
from hikmah.migration.sources import MAX_TEXT_BYTES
from hikmah.model.policy import KernelPolicy
from hikmah.model.trace import Draft
from hikmah.model.vocabulary import IMPORT_SOURCES
from hikmah.rules.operations import Purge, Remember
from hikmah.store.core import Store
from tests.harness.store import DAY, NOW, remember, write
from tests.kernel.peers import import_items


def item(content: str = "Ana prefers Neovim", at: int = NOW - 5 * DAY, **fields: object):  # type: ignore[no-untyped-def]
    values: dict[str, object] = {
        "source": "tool:test-peer",
        "identity": "record-1",
        "locator": "/tmp/export.jsonl:3",
        "kind": "observation",
        "content": content,
        "created_at": at,
        "tags": ("Ana", " editor ", "ana"),
    }
    values.update(fields)
    return make_item(**values)  # type: ignore[arg-type]


def test_a_new_record_is_written_once_never_verified_with_its_provenance(store: Store) -> None:
    first = item()
    writes, skips = import_items(store, [first])
    assert skips == [] and len(writes) == 1
    stored = store.read(queries.get, writes[0].trace_id)
    assert stored.status == "active"
    trace = stored.trace
    assert trace.id == item_trace_id(first, 1)
    assert trace.content == "Ana prefers Neovim"
    assert trace.tags == ("ana", "editor")
    assert trace.created_at == NOW - 5 * DAY
    assert trace.provenance.source == "tool:test-peer"
    assert trace.provenance.locator == "/tmp/export.jsonl:3"
    assert trace.provenance.verified is False
    assert content_version(trace) == first.version

    writes, skips = import_items(store, [item()])
    assert writes == []
    assert [(s.reason, s.trace_id) for s in skips] == [("already", trace.id)]


def test_a_changed_record_corrects_its_earlier_import(store: Store) -> None:
    (v1,), _ = import_items(store, [item()])
    changed = item("Ana prefers Helix", at=NOW - DAY)
    (v2,), skips = import_items(store, [changed])
    assert skips == [] and v2.correction
    assert v2.draft.supersedes == v1.trace_id
    assert v2.trace_id == item_trace_id(changed, 2)
    assert store.read(queries.get, v1.trace_id).status == "superseded"
    assert store.read(queries.get, v1.trace_id).superseded_by == v2.trace_id
    assert store.read(queries.get, v2.trace_id).trace.content == "Ana prefers Helix"

    # The later export again: nothing; the earlier export again: nothing either.
    assert import_items(store, [changed])[1][0].reason == "already"
    writes, skips = import_items(store, [item()])
    assert writes == [] and [s.reason for s in skips] == ["older"]
    assert store.read(queries.get, v2.trace_id).status == "active"


def test_a_record_changed_back_later_is_written_but_an_undated_repeat_is_not(
    store: Store,
) -> None:
    same_time = NOW - 5 * DAY
    import_items(store, [item(at=same_time)])
    import_items(store, [item("Ana prefers Helix", at=same_time)])
    # Back to the first text with no later time: an old export, not a change.
    assert [s.reason for s in import_items(store, [item(at=same_time)])[1]] == ["older"]
    # Back to it with a later time: the peer changed it back.
    (v3,), _ = import_items(store, [item(at=NOW)])
    assert v3.trace_id == item_trace_id(item(), 3)
    assert store.read(queries.get, v3.trace_id).trace.content == "Ana prefers Neovim"


def test_a_person_s_correction_is_never_overridden(store: Store) -> None:
    (v1,), _ = import_items(store, [item()])
    (mine,) = write(
        store,
        Remember(
            draft=Draft(content="Ana prefers Zed", source="human:ana", supersedes=v1.trace_id)
        ),
    )
    writes, skips = import_items(store, [item("Ana prefers Helix", at=NOW)])
    assert writes == []
    assert [(s.reason, s.trace_id) for s in skips] == [("kept_correction", mine.id)]


def test_a_purged_import_is_never_brought_back(store: Store) -> None:
    (v1,), _ = import_items(store, [item()])
    write(store, Purge(id=v1.trace_id, reason="not wanted"))
    for again in (item(), item("Ana prefers Helix", at=NOW)):
        assert store.read(plan, again) == Skip(again, "purged", v1.trace_id)


def test_trace_ids_are_stable_time_sortable_and_wide() -> None:
    dated = item(born_at=1_700_000_000_000)
    assert item_trace_id(dated, 1) == item_trace_id(item(born_at=1_700_000_000_000), 1)
    assert item_trace_id(dated, 1) != item_trace_id(dated, 2)
    assert item_trace_id(dated, 1) != item_trace_id(item(identity="record-2"), 1)
    assert re.fullmatch(r"tr_018bcfe56800[0-9a-f]{16}", item_trace_id(dated, 1))
    # A source without times dates every id 0, so an id never depends on a file's mtime.
    assert item_trace_id(item(at=1), 1) == item_trace_id(item(at=2), 1)
    assert item_trace_id(item(), 1).startswith("tr_000000000000")


def test_items_are_stored_exactly_as_made_so_versions_compare() -> None:
    messy = item("  Ana prefers Neovim \n", claim_key=" editor ", claim_value=" Neovim ")
    assert messy.content == "Ana prefers Neovim"
    assert messy.tags == ("ana", "editor")
    assert (messy.claim_key, messy.claim_value) == ("editor", "Neovim")
    too_long = item(tags=("x" * 201, "ok", "tab\there"))
    assert too_long.tags == ("ok",)  # a write would refuse the others and lose the item
    assert item().version != item(scope="project:/src/app").version
    assert item().version == item(locator="elsewhere:9", at=1).version


def test_a_record_read_twice_is_kept_once_or_refused_if_it_differs() -> None:
    found = Collector()
    found.add(item())
    found.add(item(locator="/tmp/export.jsonl:9"))
    assert len(found.items) == 1
    with pytest.raises(ImportSourceError, match=r"export\.jsonl:3 and .*:9 are the same record"):
        found.add(item("Ana prefers Helix", locator="/tmp/export.jsonl:9"))


def test_a_write_is_an_ordinary_remember_judged_by_the_detector(store: Store) -> None:
    leaked = item("the staging password = hunter2-staging-99")
    planned = store.read(plan, leaked)
    assert isinstance(planned, Write)
    (outcome,) = store.apply([planned.operation(None)], now_ms=NOW, policy=KernelPolicy())
    assert getattr(outcome, "reason", None) == "secret_detected"
    assert "hunter2" not in str(outcome)
    assert store.read(queries.lookup, planned.trace_id) is None


def test_a_write_that_restates_an_active_trace_names_it_and_is_still_written(
    store: Store,
) -> None:
    mine = remember(store, "Ana  prefers NEOVIM", kind="preference")
    retired = remember(store, "Ana uses Vim")
    write(store, Purge(id=retired.id, reason="wrong"))
    restating = item("ana prefers neovim", identity="a")
    again_in_page = item("Ana uses Emacs", identity="b")
    writes, _ = import_items(
        store,
        [
            restating,
            again_in_page,
            item("ana uses emacs", identity="c"),
            item("Ana uses Vim", identity="d"),  # purged: nothing active says it
            item("Ana prefers Neovim daily", identity="e"),  # more words: not the same
        ],
    )
    assert [w.duplicate_of for w in writes] == [mine.id, None, writes[1].trace_id, None, None]
    assert store.read(queries.get, writes[0].trace_id).status == "active"
    restating_too = store.read(lambda s: list(queries.same_content(s, "ANA prefers neovim")))
    assert restating_too == [mine.id, writes[0].trace_id]
    # A later page finds the earlier pages' writes in the store, and a correction is not
    # a restatement of the version it corrects.
    later, _ = import_items(
        store,
        [item("Ana uses Emacs", identity="f"), item("Ana prefers Neovim", identity="a", tags=())],
    )
    assert later[0].duplicate_of in {writes[1].trace_id, writes[2].trace_id}
    assert later[1].correction and later[1].duplicate_of == mine.id
    assert store.read(lambda s: list(queries.same_content(s, "the of and"))) == []


def test_an_unknown_source_is_refused_naming_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(
        ImportSourceError, match="unknown source 'memos': use one of mcp-memory, claude-mem"
    ):
        read("memos", tmp_path)
    # A reader for each source the CLI offers (its --from choices).
    assert tuple(SOURCES) == IMPORT_SOURCES


PEERS = Path(__file__).parents[1] / "fixtures" / "peers"


@pytest.mark.parametrize(
    ("named", "given", "actual"),
    [
        ("mem0", "mcp-memory/memory-v1.jsonl", "mcp-memory"),
        ("mcp-memory", "mem0/mem0-v1.json", "mem0"),
        ("mem0", "claude-mem/claude-mem-v2.db", "claude-mem"),
        ("claude-mem", "mem0/platform-page.json", "mem0"),
        ("mem0", "basic-memory/v1", "basic-memory"),
    ],
)
def test_a_file_of_another_source_is_named_as_such(named: str, given: str, actual: str) -> None:
    with pytest.raises(ImportSourceError) as refused:
        read(named, PEERS / given)
    assert f"it looks like {actual}'s: import it with --from {actual}" in str(refused.value)
    # Given the right source, the same file reads.
    assert read(actual, PEERS / given).items


def test_a_file_of_no_known_source_gets_no_guess(tmp_path: Path) -> None:
    path = tmp_path / "notes.json"
    path.write_text('{"title": "groceries"}')
    with pytest.raises(ImportSourceError) as refused:
        read("mem0", path)
    assert "looks like" not in str(refused.value)


@pytest.mark.parametrize(
    ("source", "name"),
    [("mcp-memory", "memory.jsonl"), ("mem0", "export.json"), ("claude-md", "CLAUDE.md")],
)
def test_a_text_export_over_the_size_cap_is_refused_before_it_is_read(
    tmp_path: Path, source: str, name: str
) -> None:
    path = tmp_path / name
    with path.open("wb") as file:
        file.truncate(MAX_TEXT_BYTES + 1)  # sparse: no disk is used
    with pytest.raises(ImportSourceError, match="over 256 MiB"):
        read(source, path)  # type: ignore[arg-type]
