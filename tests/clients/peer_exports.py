"""The peers' own exports (tests/fixtures/peers) laid out where a person would have them,
for the CLI's ``import --from`` tests: one place per source, v1 first, then v2 over it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import NamedTuple

from tests.kernel.peers import PEERS, V1_TIME, V2_TIME, copy


class Peer(NamedTuple):
    source: str
    name: str  # where the export lives, under the test's folder
    v1: str  # the fixture of each version
    v2: str


PEERS_BY_SOURCE = {
    peer.source: peer
    for peer in (
        Peer("mcp-memory", "memory.jsonl", "memory-v1.jsonl", "memory-v2.jsonl"),
        Peer("claude-mem", "claude-mem.db", "claude-mem-v1.db", "claude-mem-v2.db"),
        Peer("mem0", "mem0.json", "mem0-v1.json", "mem0-v2.json"),
        Peer("basic-memory", "kb", "v1", "v2"),
        Peer("claude-md", "shop/CLAUDE.md", "v1/CLAUDE.md", "v2/CLAUDE.md"),
    )
}


def place(root: Path, source: str, version: str = "v1") -> Path:
    """Put ``version`` of the source's fixture at its place under ``root`` (replacing what
    is there, as the peer's next export would), dated so that v2 is the newer."""
    peer = PEERS_BY_SOURCE[source]
    target = root / peer.name
    staged = copy(source, peer.v1 if version == "v1" else peer.v2, root / ".staged" / version,
                  V1_TIME if version == "v1" else V2_TIME)  # fmt: skip
    if target.is_dir():
        shutil.rmtree(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    if source == "claude-md" and not (target.parent / ".git").exists():
        # A project's CLAUDE.md: the project is its git repository.
        subprocess.run(["git", "init", "-q", str(target.parent)], check=True)
    staged.replace(target)
    return target


__all__ = ["PEERS", "PEERS_BY_SOURCE", "Peer", "place"]
