"""mem0 exports: Memory.get_all() as mem0ai itself returned it (tests/fixtures/peers/mem0,
made without a model: infer=False), and the platform's shapes, written from its
documentation because the hosted service cannot run here (see the fixture's manifest)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hikmah.index import queries
from hikmah.migration import ImportSourceError, read
from hikmah.migration.items import iso_ms
from hikmah.store.core import Store
from tests.kernel.peers import PEERS, copy, import_items, kinds

KEY = "AKIAIOSFODNN7EXAMPLE"  # AWS's documented example access key id


def export(name: str) -> dict[str, object]:
    return json.loads((PEERS / "mem0" / name).read_text())  # type: ignore[no-any-return]


def test_get_all_records_become_observations_scoped_to_their_user(tmp_path: Path) -> None:
    path = copy("mem0", "mem0-v1.json", tmp_path)
    reading = read("mem0", path)
    assert kinds(reading.items) == {"observation": 5}
    records = {r["id"]: r for r in export("mem0-v1.json")["results"]}  # type: ignore[attr-defined]
    for item in reading.items:
        record = records[item.locator.rsplit("=", 1)[1]]
        assert item.content == record["memory"]
        assert item.scope == "person:ana"
        assert item.source == "tool:mem0"
        assert item.born_at == iso_ms(record["created_at"])
        assert item.created_at == iso_ms(record["updated_at"])
        assert item.locator == f"{path}#memory={record['id']}"
    by_content = {i.content: i for i in reading.items}
    assert by_content["Prefers dark roast coffee"].tags == ("food",)
    assert by_content["Wants pull requests under 400 lines"].tags == (
        "work",
        "agent:coding-assistant",
    )
    assert by_content["Is learning Rust this quarter"].tags == ("run:onboarding-2026",)


def test_an_update_in_mem0_corrects_the_earlier_import(tmp_path: Path, store: Store) -> None:
    v1 = read("mem0", copy("mem0", "mem0-v1.json", tmp_path)).items
    v2 = read("mem0", copy("mem0", "mem0-v2.json", tmp_path)).items
    assert len(import_items(store, v1)[0]) == 5
    assert import_items(store, v1)[0] == []
    writes, skips = import_items(store, v2)
    assert [w.item.content for w in writes if not w.correction] == [
        "Runs the test suite before every push"
    ]
    (moved,) = [w for w in writes if w.correction]
    assert moved.item.content == "Lives in Lisbon"
    old = store.read(queries.get, moved.draft.supersedes or "")
    assert (old.trace.content, old.status) == ("Lives in Porto", "superseded")
    # Dated by the update; its id keeps the memory's creation time.
    assert store.read(queries.get, moved.trace_id).trace.created_at > old.trace.created_at
    assert moved.trace_id[3:15] == old.trace.id[3:15]
    assert {s.reason for s in skips} == {"already"} and len(skips) == 3
    # The earlier export after the later one: the update stays.
    assert import_items(store, v1)[0] == []


def test_the_platform_shapes_are_read(tmp_path: Path) -> None:
    page = read("mem0", copy("mem0", "platform-page.json", tmp_path)).items
    assert [(i.content, i.scope, i.tags) for i in page] == [
        (
            "Name: Alex. Vegetarian. Allergic to nuts.",
            "person:alex",
            ("food", "health", "app:recipes"),
        ),
        ("Alex prefers vegetarian restaurants", "person:alex", ("food", "app:recipes")),
    ]
    (listed,) = read("mem0", copy("mem0", "platform-v1-list.json", tmp_path)).items
    assert (listed.content, listed.scope) == ("Alex is planning a trip to San Francisco", "global")


def test_bad_exports_are_refused_naming_the_record_never_its_text(tmp_path: Path) -> None:
    path = copy("mem0", "mem0-v1.json", tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ImportSourceError, match="is cut short: not a mem0 export"):
        read("mem0", path)

    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps(
            {"results": [{"id": "m-1", "memory": "ok"}, {"id": "m-2", "memory": 7, "user_id": KEY}]}
        )
    )
    with pytest.raises(
        ImportSourceError, match=r"#results\[1\]: not a mem0 memory .*memory"
    ) as caught:
        read("mem0", bad)
    assert KEY not in str(caught.value)

    bad.write_text(json.dumps([{"id": KEY + " is not an id", "memory": "x"}]))
    with pytest.raises(ImportSourceError, match=r"#results\[0\]: its id is not") as caught:
        read("mem0", bad)
    assert KEY not in str(caught.value)

    bad.write_text(json.dumps([{"id": "m-1", "memory": "x", "created_at": "last tuesday"}]))
    with pytest.raises(ImportSourceError, match="#memory=m-1: created_at is not an ISO 8601 time"):
        read("mem0", bad)


def test_the_wrong_format_for_the_source_is_refused(tmp_path: Path) -> None:
    structured = tmp_path / "export.json"
    structured.write_text(json.dumps({"full_name": "Alex", "current_role": "engineer"}))
    with pytest.raises(ImportSourceError, match=r"structured export \(create_memory_export\)"):
        read("mem0", structured)
    with pytest.raises(ImportSourceError, match="is not one JSON document: not a mem0 export"):
        read("mem0", copy("mcp-memory", "memory-v1.jsonl", tmp_path))
    with pytest.raises(ImportSourceError, match="is a directory"):
        read("mem0", tmp_path)


def test_empty_memories_are_skipped_and_named(tmp_path: Path) -> None:
    path = tmp_path / "export.json"
    path.write_text(
        json.dumps(
            {"results": [{"id": "m-1", "memory": "  "}, {"id": "m-2", "memory": "Likes tea"}]}
        )
    )
    reading = read("mem0", path)
    assert [i.content for i in reading.items] == ["Likes tea"]
    assert reading.skipped == [f"{path}#memory=m-1: an empty memory"]
