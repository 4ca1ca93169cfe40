"""CLAUDE.md and AGENTS.md files (tests/fixtures/peers/claude-md: real-world shapes, the
Hikmah block in them rendered by hikmah_cli.writeback, which the import must skip)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from hikmah.index import queries
from hikmah.migration import ImportSourceError, read
from hikmah.store.core import Store
from tests.kernel.peers import PEERS, V1_TIME, V2_TIME, copy, import_items, kinds

KEY = "AKIAIOSFODNN7EXAMPLE"  # AWS's documented example access key id


def repository(tmp_path: Path, version: str = "v1") -> Path:
    """The fixture's files in a git repository of their own (the project they belong to)."""
    root = tmp_path / "shop"
    root.mkdir(exist_ok=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    at = V2_TIME if version == "v2" else V1_TIME
    for name in ("CLAUDE.md", "AGENTS.md"):
        (root / name).write_bytes((PEERS / "claude-md" / version / name).read_bytes())
        os.utime(root / name, ns=(at * 1_000_000, at * 1_000_000))
    return root


def test_rules_become_constraints_preferences_procedures_and_the_block_is_skipped(
    tmp_path: Path,
) -> None:
    root = repository(tmp_path)
    path = root / "CLAUDE.md"
    reading = read("claude-md", path)
    assert kinds(reading.items) == {
        "constraint": 5,
        "observation": 1,
        "preference": 3,
        "procedure": 3,
    }
    by_content = {i.content: i for i in reading.items}
    never = by_content["NEVER commit .env files or anything under secrets/"]
    assert never.kind == "constraint"
    assert never.tags == ("claude.md", "rules")
    assert never.scope == f"project:{root.resolve()}"
    assert never.locator == f"{path}:25"
    assert never.source == "tool:claude-md"
    assert by_content["Prefer named exports over default exports"].kind == "preference"
    assert by_content["Commands:\npnpm install\npnpm db:migrate"].kind == "procedure"
    assert by_content["`pnpm dev` starts the app on port 3000"].kind == "procedure"
    assert (
        by_content[
            "IMPORTANT: the payments service is owned by another team. Ask before changing it."
        ].kind
        == "constraint"
    )
    # What Hikmah wrote back into the file is not imported back, nor the @import line.
    text = path.read_text()
    assert "Never deploy on Fridays" in text and "@docs/architecture.md" in text
    assert not any("Fridays" in c or "pnpm over npm" in c or c.startswith("@") for c in by_content)

    agents = read("claude-md", root / "AGENTS.md").items
    assert [(i.kind, i.content) for i in agents] == [
        ("procedure", "Install Go 1.23 and Node 22"),
        ("procedure", "Run `make bootstrap`"),
        ("preference", "Commit messages follow Conventional Commits"),
        ("preference", "Small pull requests, one concern each"),
        ("constraint", "You must not push to main directly"),
        ("procedure", "Run `make test` before opening a pull request."),
    ]


def test_the_person_s_own_file_is_global(tmp_path: Path) -> None:
    home = tmp_path / "home"
    own = copy("claude-md", "home/.claude/CLAUDE.md", tmp_path)
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "CLAUDE.md").write_bytes(own.read_bytes())
    items = read("claude-md", home / ".claude" / "CLAUDE.md", home=home).items
    assert [(i.kind, i.scope) for i in items] == [
        ("preference", "global"),
        ("preference", "global"),
        ("constraint", "global"),
    ]


def test_an_edited_rule_corrects_its_import_and_removals_change_nothing_else(
    tmp_path: Path, store: Store
) -> None:
    v1 = read("claude-md", repository(tmp_path) / "CLAUDE.md").items
    assert len(import_items(store, v1)[0]) == 12
    assert import_items(store, v1)[0] == []
    v2 = read("claude-md", repository(tmp_path, "v2") / "CLAUDE.md").items
    writes, skips = import_items(store, v2)
    assert [w.item.content for w in writes if not w.correction] == [
        "Co-locate tests beside the component"
    ]
    (edited,) = [w for w in writes if w.correction]
    assert edited.item.content == "Keep components under 150 lines"
    assert (
        store.read(queries.get, edited.draft.supersedes or "").trace.content
        == "Keep components under 200 lines"
    )
    assert len(skips) == 10 and {s.reason for s in skips} == {"already"}
    # The removed rule stays, as every write does, until a person retires it.
    assert any(
        t.trace.content == "Do not edit generated files in src/gen/" and t.status == "active"
        for t in store.read(lambda s: list(queries.traces(s)))
    )


def test_bad_input_is_refused(tmp_path: Path) -> None:
    root = repository(tmp_path)
    with pytest.raises(ImportSourceError, match="is a directory: give the file"):
        read("claude-md", root)
    with pytest.raises(ImportSourceError, match="is not a Markdown file"):
        read("claude-md", copy("mem0", "mem0-v1.json", tmp_path))
    path = root / "CLAUDE.md"
    text = path.read_text()
    path.write_text(text.replace("<!-- hikmah:end -->", f"- {KEY}"))
    with pytest.raises(
        ImportSourceError, match=r"CLAUDE\.md: the hikmah markers on lines \d+ do not"
    ) as caught:
        read("claude-md", path)
    assert KEY not in str(caught.value)
    path.write_bytes(b"# Rules\n\n- fine\n- \xff broken\n")
    with pytest.raises(ImportSourceError, match=r"CLAUDE\.md:4 is not UTF-8 text"):
        read("claude-md", path)
