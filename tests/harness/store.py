"""Writing to a real store in a test: operations that must succeed, and what they wrote."""

from __future__ import annotations

from hikmah.index import queries
from hikmah.model.errors import HikmahError
from hikmah.model.policy import KernelPolicy
from hikmah.model.trace import Draft, Trace
from hikmah.model.wire.memory import StoredTrace
from hikmah.rules.operations import Operation, Remember, Written
from hikmah.store.core import Store

NOW = 1_790_000_000_000
DAY = 86_400_000


def write(store: Store, *ops: Operation, now: int = NOW) -> list[Written]:
    """Apply operations that must all succeed."""
    outcomes = store.apply(ops, now_ms=now, policy=KernelPolicy())
    for outcome in outcomes:
        if isinstance(outcome, HikmahError):
            raise outcome
    return [o for o in outcomes if isinstance(o, Written)]


def remember(store: Store, content: str, now: int = NOW, **fields: object) -> Trace:
    """Write one trace and return it."""
    (written,) = write(store, Remember(draft=Draft(content=content, **fields)), now=now)  # type: ignore[arg-type]
    assert written.trace is not None
    return written.trace


def remember_forecast(store: Store, content: str, family: str = "cache") -> Trace:
    """Write one prediction (a yes/no forecast at 0.7) and return it."""
    (written,) = write(
        store,
        Remember(
            draft=Draft(
                content=content,
                kind="prediction",
                family=family,
                probability=0.7,
                prediction_type="noul",
            ),
            allow_prediction=True,
        ),
    )
    assert written.trace is not None
    return written.trace


def all_traces(store: Store) -> list[StoredTrace]:
    """Every trace but the purged ones, in write order."""
    return store.read(lambda snapshot: list(queries.traces(snapshot)))
