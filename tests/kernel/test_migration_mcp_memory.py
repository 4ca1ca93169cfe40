"""The MCP memory server's memory.jsonl, as @modelcontextprotocol/server-memory itself wrote
it (tests/fixtures/peers/mcp-memory: driven through the official MCP client)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hikmah.index import queries
from hikmah.migration import ImportSourceError, read
from hikmah.store.core import Store
from tests.kernel.peers import V2_TIME, copy, import_items, kinds

KEY = "AKIAIOSFODNN7EXAMPLE"  # AWS's documented example access key id


def graph(tmp_path: Path, version: str = "v1", at: int | None = None) -> Path:
    name = f"memory-{version}.jsonl"
    return copy("mcp-memory", name, tmp_path, **({} if at is None else {"at_ms": at}))


def test_entities_observations_and_relations_become_typed_items(tmp_path: Path) -> None:
    path = graph(tmp_path)
    reading = read("mcp-memory", path)
    assert reading.skipped == []
    assert kinds(reading.items) == {"belief": 10, "observation": 10}
    by_content = {i.content: i for i in reading.items}

    seen = by_content["Ana: Prefers Neovim over VS Code"]
    assert seen.kind == "observation"
    assert seen.tags == ("ana", "person")
    assert seen.locator == f"{path}:1 observations[0]"
    assert seen.source == "tool:mcp-memory"
    assert seen.scope == "global"
    assert seen.created_at == path.stat().st_mtime_ns // 1_000_000  # the graph keeps no times
    assert seen.born_at is None

    typed = by_content["Hikmah is a project"]
    assert (typed.kind, typed.claim_key, typed.claim_value) == (
        "belief",
        "Hikmah entity type",
        "project",
    )
    works = by_content["Ana works_at Acme Corp"]
    assert (works.kind, works.claim_key, works.claim_value) == (
        "belief",
        "Ana works_at",
        "Acme Corp",
    )
    assert works.tags == ("ana", "acme corp")
    assert works.locator == f"{path}:6"
    assert all(not i.draft().verified for i in reading.items)


def test_identities_are_stable_across_reads_and_moves(tmp_path: Path) -> None:
    first = read("mcp-memory", graph(tmp_path))
    elsewhere = copy("mcp-memory", "memory-v1.jsonl", tmp_path / "moved", at_ms=V2_TIME)
    again = read("mcp-memory", elsewhere)
    assert [(i.identity, i.version) for i in first.items] == [
        (i.identity, i.version) for i in again.items
    ]


def test_the_changed_export_adds_what_is_new_and_corrects_the_retyped_entity(
    tmp_path: Path, store: Store
) -> None:
    v1 = read("mcp-memory", graph(tmp_path)).items
    v2 = read("mcp-memory", graph(tmp_path, "v2", at=V2_TIME)).items
    written, _ = import_items(store, v1)
    assert len(written) == 20
    assert import_items(store, v1) == ([], import_items(store, v1)[1])
    assert {s.reason for s in import_items(store, v1)[1]} == {"already"}

    writes, skips = import_items(store, v2)
    new = sorted(w.item.content for w in writes if not w.correction)
    assert new == [
        "Acme Inc is an organization",
        "Acme Inc: Ana's employer since 2023",
        "Ana works_at Acme Inc",
        "Ana: Switched to a split keyboard",
        "Bruno works_at Acme Inc",
        "Hikmah depends_on LMDB",
        "LMDB is a library",
        "LMDB: A memory-mapped key-value store",
    ]
    # The retyped entity: its type belief, and its observations (tagged with the type).
    corrected = {w.item.content: w for w in writes if w.correction}
    assert sorted(corrected) == [
        "Hikmah is a software",
        "Hikmah: A per-user memory daemon written in Python",
        "Hikmah: Stores traces in LMDB",
    ]
    retyped = corrected["Hikmah is a software"]
    old = store.read(queries.get, retyped.draft.supersedes or "")
    assert old.trace.content == "Hikmah is a project" and old.status == "superseded"
    assert store.read(queries.get, retyped.trace_id).trace.claim_value == "software"
    assert corrected["Hikmah: Stores traces in LMDB"].item.tags == ("hikmah", "software")
    assert {s.reason for s in skips} == {"already"} and len(skips) == 9
    # What the server deleted stays: an export cannot say what went.
    assert any(
        t.trace.content == "Old Laptop is a device"
        for t in store.read(lambda s: list(queries.traces(s)))
    )
    assert import_items(store, v2)[0] == []


def test_a_truncated_graph_is_refused_whole_naming_the_line(tmp_path: Path) -> None:
    path = graph(tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[: data.index(b"\n", data.index(b"\n") + 1) + 40])
    with pytest.raises(ImportSourceError, match=rf"^{path}:3 is not a JSON object"):
        read("mcp-memory", path)


def test_bad_input_is_refused_with_the_file_and_record_and_no_text(tmp_path: Path) -> None:
    with pytest.raises(ImportSourceError, match="is a directory: give the file"):
        read("mcp-memory", tmp_path)
    with pytest.raises(ImportSourceError, match="does not exist"):
        read("mcp-memory", tmp_path / "nothing.jsonl")

    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"type":"entity","name":"Ana","entityType":"person","observations":[]}\n'
        f'{{"type":"entity","name":"{KEY}","entityType":"person","observations":"{KEY}"}}\n'
    )
    with pytest.raises(ImportSourceError, match=rf"{bad}:2: malformed record") as caught:
        read("mcp-memory", bad)
    assert KEY not in str(caught.value)


def test_the_wrong_format_for_the_source_is_refused(tmp_path: Path) -> None:
    mem0 = copy("mem0", "mem0-v1.json", tmp_path)
    with pytest.raises(ImportSourceError, match=r":1 is not a JSON object"):
        read("mcp-memory", mem0)
    traces = tmp_path / "hikmah-export.jsonl"
    traces.write_text('{"kind": "observation", "content": "x"}\n{"id": "tr_1", "content": "y"}\n')
    with pytest.raises(ImportSourceError, match="is not an MCP memory graph"):
        read("mcp-memory", traces)


def test_lines_the_server_ignores_are_skipped_and_named(tmp_path: Path) -> None:
    path = tmp_path / "memory.jsonl"
    path.write_text(
        '{"type":"entity","name":"Ana","entityType":"person","observations":["Likes tea"]}\n'
        '{"type":"note","text":"kept by some fork"}\n\n'
    )
    reading = read("mcp-memory", path)
    assert [i.content for i in reading.items] == ["Ana is a person", "Ana: Likes tea"]
    assert reading.skipped == [f"{path}:2: not an entity or a relation (the server ignores it too)"]
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert read("mcp-memory", empty).items == []
