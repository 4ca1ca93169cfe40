"""``hikmah writeback`` end to end: verified rules from a real daemon into a hand-kept file."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.harness.daemon import Running


def writeback(daemon: Running, *args: str) -> subprocess.CompletedProcess[str]:
    return daemon.cli("writeback", *args)


def test_writeback_renders_verified_rules_of_the_file_project(
    daemon: Running, tmp_path: Path
) -> None:
    project = tmp_path / "app"
    (project / ".git").mkdir(parents=True)
    (project / "docs").mkdir()
    target = project / "docs" / "CLAUDE.md"
    target.write_text("# My notes\n\nKeep this line.\n")
    scope = f"project:{project.resolve()}"
    daemon.call(
        "memory.remember", content="Use uv, never pip", kind="preference", verified=True,
        scope=scope, source="human:ana",
    )  # fmt: skip
    daemon.call("memory.remember", content="Run ruff before commit", kind="procedure", scope=scope)
    daemon.call(
        "memory.remember", content="No force-push to main", kind="constraint", verified=True
    )
    daemon.call(
        "memory.remember", content="Tabs please", kind="preference", verified=True,
        scope="project:/somewhere/else",
    )  # fmt: skip

    first = writeback(daemon, "--to", str(target), "--json")
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["result"] == "created"
    text = target.read_text()
    assert text.startswith("# My notes\n\nKeep this line.\n")
    block = text[text.index("<!-- hikmah:begin") :]
    assert "Use uv, never pip" in block and "No force-push to main" in block
    assert "Run ruff before commit" not in block  # not verified
    assert "Tabs please" not in block  # another project
    assert block.rstrip().endswith("<!-- hikmah:end -->")

    again = writeback(daemon, "--to", str(target))
    assert again.returncode == 0 and again.stdout.startswith("unchanged")
    assert target.read_text() == text

    target.write_text(text.replace("Use uv, never pip", "Use uv, never pip (edited)"))
    refused = writeback(daemon, "--to", str(target))
    assert refused.returncode == 3 and "--force" in refused.stderr
    assert "(edited)" in target.read_text()
    forced = writeback(daemon, "--to", str(target), "--force")
    assert forced.returncode == 0 and forced.stdout.startswith("updated")
    assert target.read_text() == text


def test_writeback_with_an_explicit_scope(daemon: Running, tmp_path: Path) -> None:
    daemon.call(
        "memory.remember", content="Ana prefers short PRs", kind="preference", verified=True,
        scope="person:ana",
    )  # fmt: skip
    target = tmp_path / "AGENTS.md"
    result = writeback(daemon, "--to", str(target), "--scope", "person:ana")
    assert result.returncode == 0, result.stderr
    assert "Ana prefers short PRs" in target.read_text()
    assert "person:ana and global" in target.read_text()
