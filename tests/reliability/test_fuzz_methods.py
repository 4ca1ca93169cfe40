"""Methods: every method the daemon serves, read from a live
dispatcher, gets hostile params through the real connection, dispatcher and writer:
wrong types, out-of-range and 64-bit-overflowing numbers, odd and huge text,
unicode, deep nesting, unknown members. Each request is answered, within a bound,
with a result or a well-formed JSON-RPC error; nothing escapes.

Internal errors (-32603) are failures: the two classes of input this fuzzer first
found (keys LMDB cannot hold, numbers past 64 bits) are fixed and reproduced in
test_found_bugs.py. ``HIKMAH_FUZZ_EXAMPLES`` sets the examples per method
(``bench/stress/fuzz_hypothesis.py`` runs thousands).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .inprocess import METHODS, InProcess, in_process, problems
from .strategies import EXAMPLES, params_for, request_line, rooted

# A request may take this long at most (the slowest seen here is a few ms).
BOUND_S = 5.0


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcess]:
    root = tmp_path_factory.mktemp("methods")
    with in_process(root) as daemon:
        exchange = daemon.exchange(
            [
                request_line("memory.remember", {"content": "rotate the staging cert"}, 1),
                request_line(
                    "memory.remember",
                    {"content": "renew the domain", "kind": "commitment", "deadline": "+2d"},
                    2,
                ),
                request_line(
                    "memory.predict",
                    {"family": "ci.green", "question": "Will CI pass?", "type": "noul", "p": 0.7},
                    3,
                ),
            ]
        )
        assert all("result" in r for r in exchange.replies), exchange.replies
        yield daemon


@pytest.mark.parametrize("name", sorted(METHODS))
def test_every_method_answers_hostile_params(served: InProcess, name: str) -> None:
    method = METHODS[name]
    root = str(served.root)

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(params=params_for(method), request_id=st.one_of(st.integers(), st.text(max_size=8)))
    def check(params: dict[str, Any], request_id: int | str) -> None:
        params = rooted(params, root)
        exchange = served.exchange([request_line(name, params, request_id)])
        assert exchange.seconds < BOUND_S, f"{exchange.seconds:.1f} s"
        (reply,) = exchange.replies
        found = problems(reply)
        assert not found, (found, reply)
        if reply.get("error", {}).get("code") == -32700:
            return  # non-finite numbers are not JSON: a parse error, id null
        assert reply["id"] == request_id

    check()


def test_every_method_was_fuzzed() -> None:
    """The parametrisation above comes from the live dispatcher; sanity-check it."""
    assert {"memory.remember", "memory.recall", "ledger.verify", "memory.purge"} <= set(METHODS)
    assert len(METHODS) >= 30
