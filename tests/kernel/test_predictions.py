"""Forecasts and their outcomes: what a prediction must say, and how it is resolved once."""

from __future__ import annotations

import re
from typing import Any

import pytest

from hikmah.access.principal import AgentSession
from hikmah.index import queries
from hikmah.model.errors import ConflictError, InvalidInput, ProvenanceRefused
from hikmah.model.policy import KernelPolicy
from hikmah.model.trace import Draft, Trace
from hikmah.rules.operations import Fulfill, Remember
from hikmah.store.core import Store
from tests.harness.store import NOW, remember, write

SESSION = AgentSession(host="claude-code", session_id="s1", variables=("CLAUDECODE",))


def predict(store: Store, **fields: Any) -> Trace:
    draft = Draft(kind="prediction", **{"content": "will CI be green?", **fields})
    (written,) = write(store, Remember(draft=draft, allow_prediction=True))
    assert written.trace is not None
    return written.trace


def outcome(store: Store, prediction: str, observed: str, **fields: Any) -> Any:
    draft = Draft(
        content=f"observed {observed}",
        kind="outcome",
        fulfills=prediction,
        value=observed,
        **fields,
    )
    return store.apply([Remember(draft=draft)], now_ms=NOW + 1, policy=KernelPolicy())[0]


NOUL = {"family": "ci.green", "prediction_type": "noul", "probability": 0.8}
CHOICE = {
    "family": "release.day",
    "prediction_type": "choice",
    "probability": 0.6,
    "value": "fri",
    "answer_space": ("thu", "fri"),
}


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({}, "needs a family"),
        ({"family": "ci"}, "type (noul, choice or score) and p"),
        ({"family": "ci", "prediction_type": "noul"}, "type (noul, choice or score) and p"),
        ({**CHOICE, "answer_space": ("fri",)}, "2+ distinct answers"),
        ({**CHOICE, "answer_space": ("fri", "fri")}, "2+ distinct answers"),
        ({**CHOICE, "value": "mon"}, "one of its answer_space"),
        ({**NOUL, "answer_space": ("a", "b")}, "choice predictions only"),
        ({**NOUL, "probability": 1.5}, "between 0 and 1"),
    ],
)
def test_a_prediction_must_say_how_it_is_scored(
    store: Store, fields: dict[str, Any], message: str
) -> None:
    with pytest.raises(InvalidInput, match=re.escape(message)):
        predict(store, **fields)


def test_a_forecast_is_never_verified(store: Store) -> None:
    with pytest.raises(ProvenanceRefused, match="never verified"):
        predict(store, verified=True, **NOUL)


def test_prediction_fields_do_not_belong_on_other_kinds(store: Store) -> None:
    with pytest.raises(InvalidInput, match="predictions only"):
        remember(store, "note", family="ci")
    with pytest.raises(InvalidInput, match="value belongs to a prediction"):
        remember(store, "note", value="yes")


def test_an_outcome_resolves_a_prediction_exactly_once(store: Store) -> None:
    forecast = predict(store, **NOUL)
    first = outcome(store, forecast.id, "yes", source="human:ana")
    assert first.trace.value == "yes" and first.trace.fulfills == forecast.id
    assert store.read(queries.get, forecast.id).status == "fulfilled"
    again = outcome(store, forecast.id, "no", source="human:ana")
    assert isinstance(again, ConflictError) and "resolved once" in str(again)


def test_a_model_never_grades_its_own_forecast(store: Store) -> None:
    forecast = predict(store, **NOUL)
    refused = outcome(store, forecast.id, "yes", source="model:gpt")
    assert isinstance(refused, ProvenanceRefused)
    assert store.read(queries.get, forecast.id).status == "active"


@pytest.mark.parametrize(
    ("fields", "observed", "accepted"),
    [
        (NOUL, "yes", True),
        (NOUL, "maybe", False),
        (CHOICE, "thu", True),
        (CHOICE, "sat", False),
        ({"family": "eta", "prediction_type": "score", "probability": 0.3}, "0.25", True),
        ({"family": "eta", "prediction_type": "score", "probability": 0.3}, "1.5", False),
        ({"family": "eta", "prediction_type": "score", "probability": 0.3}, "nan", False),
    ],
)
def test_the_observed_value_must_fit_the_prediction(
    store: Store, fields: dict[str, Any], observed: str, accepted: bool
) -> None:
    forecast = predict(store, **fields)
    result = outcome(store, forecast.id, observed)
    assert isinstance(result, InvalidInput) != accepted


def test_fulfill_alone_cannot_resolve_a_prediction(store: Store) -> None:
    forecast = predict(store, **NOUL)
    refused = store.apply([Fulfill(id=forecast.id)], now_ms=NOW, policy=KernelPolicy())[0]
    assert isinstance(refused, InvalidInput) and "not a commitment" in str(refused)


def test_agent_forecasts_and_outcomes_are_stamped(store: Store) -> None:
    draft = Draft(kind="prediction", content="tests pass", **NOUL)  # type: ignore[arg-type]
    (written,) = write(store, Remember(draft=draft, allow_prediction=True, session=SESSION))
    assert written.trace is not None
    assert written.trace.provenance.locator == "agent-session:claude-code:s1"
