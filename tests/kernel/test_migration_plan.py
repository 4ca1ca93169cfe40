"""The import plan over a real store: a re-import writes nothing, a changed record becomes
a correction, and an import never overrides a person's correction or a purge."""

from __future__ import annotations

import re
from functools import partial
from pathlib import Path

import pytest

from hikmah import queries
from hikmah.migration import SOURCES, ImportSourceError, Skip, Write, plan, read
from hikmah.migration.items import Collector, content_version, item_trace_id, make_item
from hikmah.policy import KernelPolicy
from hikmah.rules import Purge, Remember
from hikmah.store import Store
from hikmah.trace import Draft
from tests.kernel.conftest import DAY, NOW, write
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
    assert [(s.reason, s.trace_id) for s in skips] == [("corrected", mine.id)]


def test_a_purged_import_is_never_brought_back(store: Store) -> None:
    (v1,), _ = import_items(store, [item()])
    write(store, Purge(id=v1.trace_id, reason="not wanted"))
    for again in (item(), item("Ana prefers Helix", at=NOW)):
        assert plan(again, partial(store.read, queries.lookup)) == Skip(
            again, "purged", v1.trace_id
        )


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
    (planned,) = [
        p for p in [plan(leaked, partial(store.read, queries.lookup))] if isinstance(p, Write)
    ]
    (outcome,) = store.apply(
        [Remember(draft=planned.draft, trace_id=planned.trace_id, created_at=planned.created_at)],
        now_ms=NOW,
        policy=KernelPolicy(),
    )
    assert getattr(outcome, "reason", None) == "secret_detected"
    assert "hunter2" not in str(outcome)
    assert store.read(queries.lookup, planned.trace_id) is None


def test_an_unknown_source_is_refused_naming_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(
        ImportSourceError, match="unknown source 'memos': use one of mcp-memory, claude-mem"
    ):
        read("memos", tmp_path)
    assert set(SOURCES) == {"mcp-memory", "claude-mem", "mem0", "basic-memory", "claude-md"}
