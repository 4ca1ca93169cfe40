"""basic-memory projects, as basic-memory's own CLI wrote and edited the notes
(tests/fixtures/peers/basic-memory: bm tool write-note, edit-note, delete-note)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hikmah.index import queries
from hikmah.migration import ImportSourceError, read
from hikmah.store.core import Store
from tests.kernel.peers import V1_TIME, V2_TIME, copy, import_items, kinds

KEY = "AKIAIOSFODNN7EXAMPLE"  # AWS's documented example access key id


def project(tmp_path: Path, version: str = "v1") -> Path:
    return copy("basic-memory", version, tmp_path, V1_TIME if version == "v1" else V2_TIME)


def test_notes_observations_and_relations_become_items(tmp_path: Path) -> None:
    root = project(tmp_path)
    reading = read("basic-memory", root)
    assert reading.skipped == []
    assert kinds(reading.items) == {"belief": 3, "observation": 9}
    by_content = {i.content: i for i in reading.items}
    note = root / "notes" / "Coffee Brewing.md"

    observed = by_content["Coffee Brewing: I like light roasts (mornings)"]
    assert observed.kind == "observation"
    assert observed.tags == ("coffee brewing", "coffee", "brewing", "preference")
    assert observed.locator == f"{note}:16 memory://kb/notes/coffee-brewing"
    assert (observed.created_at, observed.scope, observed.source) == (
        V1_TIME,
        "global",
        "tool:basic-memory",
    )
    tagged = by_content["Coffee Brewing: Pour over gives a clean cup #brewing"]
    assert tagged.tags == ("coffee brewing", "coffee", "brewing", "method")

    related = by_content["Coffee Brewing part_of Morning Routine (daily)"]
    assert (related.kind, related.claim_key, related.claim_value) == (
        "belief",
        "Coffee Brewing part_of",
        "Morning Routine",
    )
    text = by_content["Coffee Brewing\n\nHow I brew at home, most mornings."]
    assert text.tags[-1] == "note"
    roadmap = by_content["Hikmah Roadmap: Use LMDB for the store #storage"]
    assert roadmap.tags == ("hikmah roadmap", "hikmah", "decision", "storage")


def test_the_edited_project_corrects_edits_and_adds_new_notes(tmp_path: Path, store: Store) -> None:
    v1 = read("basic-memory", project(tmp_path)).items
    v2 = read("basic-memory", project(tmp_path, "v2")).items
    assert len(import_items(store, v1)[0]) == 12
    assert import_items(store, v1)[0] == []
    writes, skips = import_items(store, v2)
    assert sorted(w.item.content for w in writes if not w.correction) == [
        "Coffee Beans: Use beans within a month of roasting",
        "Tea: Green tea after lunch #tea",
    ]
    corrected = {
        store.read(queries.get, w.draft.supersedes or "").trace.content: w.item.content
        for w in writes
        if w.correction
    }
    assert corrected == {
        "Coffee Brewing: I like light roasts (mornings)": "Coffee Brewing: I like medium roasts (mornings)",
        "Coffee Brewing part_of Morning Routine (daily)": "Coffee Brewing part_of Morning Routine (weekdays)",
        "Coffee Brewing\n\nHow I brew at home, most mornings.": "Coffee Brewing\n\nHow I brew at home, every morning.",
    }
    assert len(skips) == 5 and {s.reason for s in skips} == {"already"}
    assert import_items(store, v2)[0] == []


def test_identities_follow_the_permalink_not_the_file(tmp_path: Path) -> None:
    root = project(tmp_path)
    first = {i.identity for i in read("basic-memory", root).items}
    (root / "notes" / "Coffee Beans.md").rename(root / "Beans (renamed).md")
    assert {i.identity for i in read("basic-memory", root).items} == first


def test_shapes_basic_memory_does_not_count_as_observations(tmp_path: Path) -> None:
    root = tmp_path / "kb"
    root.mkdir()
    (root / "plain.md").write_text(
        "# Plain\n\n- [ ] a task\n- [x] done\n- [00:01:02] a timecode\n- see [[Other]] for more\n"
        "> - [quote] not an observation\n\n```\n- [code] not one either\n```\n"
    )
    (root / ".obsidian").mkdir()
    (root / ".obsidian" / "hidden.md").write_text("- [secret] skipped folder\n")
    (item,) = read("basic-memory", root).items  # the note's text, and nothing else
    assert item.identity.startswith("note\0plain\0text")
    assert "- [ ] a task" in item.content and "> - [quote] not an observation" in item.content


def test_bad_input_is_refused(tmp_path: Path) -> None:
    note = copy("basic-memory", "v1/notes/Coffee Beans.md", tmp_path)
    with pytest.raises(ImportSourceError, match="is not a directory: give the folder"):
        read("basic-memory", note)
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "data.json").write_text("{}")
    with pytest.raises(ImportSourceError, match="holds no Markdown notes"):
        read("basic-memory", empty)
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "ok.md").write_text("- [fact] fine\n")
    (broken / "bad.md").write_bytes(f"- [fact] {KEY}\n".encode() + b"\xff\xfe\n")
    with pytest.raises(ImportSourceError, match=r"bad\.md:2 is not UTF-8 text") as caught:
        read("basic-memory", broken)
    assert KEY not in str(caught.value)
