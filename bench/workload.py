"""What the benchmarks share: a developer-note vocabulary drawn Zipf-like, and table cells."""

from __future__ import annotations

import itertools
import json
import random
from typing import Any

_VOCABULARY = """
deploy cache billing auth token queue worker retry timeout schema migration index
release branch merge review test fixture flaky build docker image cluster node pod
service gateway proxy latency memory leak profile trace span metric alert pager oncall
database replica backup restore vacuum lock deadlock transaction rollback commit hook
config secret vault rotate certificate expiry dns route ingress egress firewall quota
frontend backend api client server socket stream buffer batch cron job scheduler lease
python rust golang typescript parser lexer compiler linter formatter wheel package
upgrade downgrade pin version changelog ticket sprint roadmap design review meeting
friday monday tomorrow tonight alice bob carol dave erin frank grace heidi ivan judy
slow fast broken fixed pending urgent minor major stale fresh cold warm hot noisy
"""
WORDS = _VOCABULARY.split()
ZIPF = list(itertools.accumulate(1.0 / (rank + 2) for rank in range(len(WORDS))))
TAGS = ["ops", "dev", "infra", "team", "bug", "plan", "perf", "docs"]


def zipf_words(rng: random.Random, count: int) -> list[str]:
    """``count`` words, frequent ones far more often (a Zipf-like draw)."""
    return rng.choices(WORDS, cum_weights=ZIPF, k=count)


def fmt(value: float | None, spec: str) -> str:
    """A table cell: ``-`` for a missing value."""
    return "-" if value is None else format(value, spec)


def request_body(method: str, params: dict[str, Any]) -> bytes:
    """A request line up to its id: ``{"jsonrpc":"2.0","method":...,"params":{...},"id":``."""
    message = {"jsonrpc": "2.0", "method": method, "params": params}
    return json.dumps(message, separators=(",", ":")).encode()[:-1] + b',"id":'


def with_id(body: bytes, request_id: int) -> bytes:
    """The whole line. Ids count up per client, as a JSON-RPC client's do."""
    return body + b"%d}\n" % request_id


def note_lines(count: int, seed: int) -> list[bytes]:
    """``memory.remember`` requests of short notes (6-12 words, one or two tags)."""
    rng = random.Random(seed)
    lines = []
    for i in range(count):
        content = " ".join(zipf_words(rng, rng.randint(6, 12)))
        tags = rng.sample(TAGS, rng.randint(1, 2))
        body = request_body("memory.remember", {"content": content, "tags": tags})
        lines.append(with_id(body, i))
    return lines
