"""The sentences the embedders are checked on: two that mean the same in other words,
two unrelated."""

from __future__ import annotations

TEXTS = [
    "When Postgres stops accepting connections, fail over to the replica.",
    "what to do when the primary database is down",
    "The AWS bill jumped 40% in October after the new NAT gateways.",
    "No production changes between December 20 and January 3.",
]
