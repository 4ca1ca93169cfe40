"""Calibration: every statistic against an independent reference, and by hand."""

from __future__ import annotations

import math
import random
import re
import sys
from fractions import Fraction
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hikmah.learning.calibration import (
    MEASURABLE_AT,
    FamilyCalibration,
    Resolved,
    calibrate,
    resolved_pair,
)
from hikmah.model.errors import InvalidInput, ProvenanceRefused
from hikmah.model.policy import KernelPolicy
from hikmah.model.trace import Draft, Provenance, Trace
from hikmah.rules.operations import Remember, Written
from hikmah.store.core import Store
from tests.harness.store import NOW, write

EDGES = [(0.0, 0.2), (0.2, 0.4), (0.4, 0.6), (0.6, 0.8), (0.8, 1.0)]


def pairs(family: str, forecasts: list[tuple[float, float]], binary: bool = True) -> list[Resolved]:
    return [Resolved(family=family, p=p, outcome=o, binary=binary) for p, o in forecasts]


def only(reports: list[FamilyCalibration]) -> FamilyCalibration:
    (report,) = reports
    return report


# --- The reference: plain loops over exact rationals, written apart from the module.


def ref_bin(p: float) -> int:
    if p < 0.2:
        return 0
    if p < 0.4:
        return 1
    if p < 0.6:
        return 2
    if p < 0.8:
        return 3
    return 4


def ref_brier(data: list[Resolved]) -> Fraction:
    total = Fraction(0)
    for r in data:
        total += (Fraction(r.p) - Fraction(r.outcome)) ** 2
    return total / len(data)


def ref_base_rate_brier(data: list[Resolved]) -> Fraction:
    # The variance identity mean(o²) - mean(o)², exact in rationals.
    total = Fraction(0)
    squares = Fraction(0)
    for r in data:
        total += Fraction(r.outcome)
        squares += Fraction(r.outcome) ** 2
    mean = total / len(data)
    return squares / len(data) - mean * mean


def ref_ece(data: list[Resolved]) -> Fraction:
    sum_p = [Fraction(0)] * 5
    sum_o = [Fraction(0)] * 5
    count = [0] * 5
    for r in data:
        b = ref_bin(r.p)
        sum_p[b] += Fraction(r.p)
        sum_o[b] += Fraction(r.outcome)
        count[b] += 1
    ece = Fraction(0)
    for b in range(5):
        if count[b]:
            ece += Fraction(count[b], len(data)) * abs(sum_p[b] / count[b] - sum_o[b] / count[b])
    return ece


def ref_z_parts(data: list[Resolved]) -> tuple[Fraction, Fraction]:
    numerator = Fraction(0)
    variance = Fraction(0)
    for r in data:
        p, o = Fraction(r.p), Fraction(r.outcome)
        numerator += (o - p) * (1 - 2 * p)
        variance += (1 - 2 * p) ** 2 * p * (1 - p)
    return numerator, variance


# Forecasts favour the bin edges and the values where Z's variance vanishes.
probabilities = st.one_of(
    st.sampled_from([0.0, 0.2, 0.4, 0.5, 0.6, 0.8, 1.0, math.nextafter(0.2, 0), 0.1, 0.9]),
    st.floats(0, 1),
)


@st.composite
def resolved(
    draw: st.DrawFn, families: tuple[str, ...] = ("f",), binary: bool | None = None
) -> Resolved:
    is_binary = draw(st.booleans()) if binary is None else binary
    outcome = draw(st.sampled_from([0.0, 1.0]) if is_binary else st.floats(0, 1))
    return Resolved(
        family=draw(st.sampled_from(families)),
        p=draw(probabilities),
        outcome=outcome,
        binary=is_binary,
    )


# --- resolved_pair: from traces to numbers.


def prediction_trace(**fields: Any) -> Trace:
    return Trace(id="tr_p", kind="prediction", content="forecast", created_at=NOW, **fields)


def outcome_trace(value: str | None, source: str = "human:ana") -> Trace:
    return Trace(
        id="tr_o",
        kind="outcome",
        content=f"observed {value}",
        created_at=NOW + 1,
        fulfills="tr_p",
        value=value,
        provenance=Provenance(source=source),
    )


NOUL = {"family": "ci.green", "prediction_type": "noul", "probability": 0.8}
CHOICE = {
    "family": "release.day",
    "prediction_type": "choice",
    "probability": 0.6,
    "value": "fri",
    "answer_space": ("thu", "fri", "sat"),
}
SCORE = {"family": "eta.accuracy", "prediction_type": "score", "probability": 0.3}


@pytest.mark.parametrize(
    ("fields", "observed", "expected"),
    [
        (NOUL, "yes", Resolved(family="ci.green", p=0.8, outcome=1.0, binary=True)),
        (NOUL, "no", Resolved(family="ci.green", p=0.8, outcome=0.0, binary=True)),
        (CHOICE, "fri", Resolved(family="release.day", p=0.6, outcome=1.0, binary=True)),
        (CHOICE, "thu", Resolved(family="release.day", p=0.6, outcome=0.0, binary=True)),
        (CHOICE, "sat", Resolved(family="release.day", p=0.6, outcome=0.0, binary=True)),
        (SCORE, "0.25", Resolved(family="eta.accuracy", p=0.3, outcome=0.25, binary=False)),
        (SCORE, "1", Resolved(family="eta.accuracy", p=0.3, outcome=1.0, binary=False)),
    ],
)
def test_resolved_pair_maps_each_type(
    fields: dict[str, Any], observed: str, expected: Resolved
) -> None:
    assert resolved_pair(prediction_trace(**fields), outcome_trace(observed)) == expected


@pytest.mark.parametrize(
    ("prediction", "outcome", "error", "message"),
    [
        (prediction_trace(**NOUL), outcome_trace("maybe"), InvalidInput, "yes or no"),
        (prediction_trace(**CHOICE), outcome_trace("mon"), InvalidInput, "answer space"),
        (prediction_trace(**SCORE), outcome_trace("1.5"), InvalidInput, "between 0 and 1"),
        (prediction_trace(**NOUL), outcome_trace(None), InvalidInput, "observed value"),
        (prediction_trace(**NOUL), outcome_trace("yes", "model:gpt"), ProvenanceRefused, "model"),
        (prediction_trace(family="ci"), outcome_trace("yes"), InvalidInput, "not a prediction"),
        (
            Trace(id="tr_n", kind="observation", content="note", created_at=NOW),
            outcome_trace("yes"),
            InvalidInput,
            "not a prediction",
        ),
    ],
)
def test_resolved_pair_refuses_what_cannot_be_scored(
    prediction: Trace, outcome: Trace, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=re.escape(message)):
        resolved_pair(prediction, outcome)


def test_resolved_pair_on_traces_written_through_the_store(store: Store) -> None:
    forecast = Draft(kind="prediction", content="will CI be green?", **NOUL)  # type: ignore[arg-type]
    (written,) = write(store, Remember(draft=forecast, allow_prediction=True))
    assert written.trace is not None
    observed = Draft(
        kind="outcome", content="it was", fulfills=written.trace.id, value="no", source="human:ana"
    )
    (result,) = store.apply([Remember(draft=observed)], now_ms=NOW + 1, policy=KernelPolicy())
    assert isinstance(result, Written) and result.trace is not None
    assert resolved_pair(written.trace, result.trace) == Resolved(
        family="ci.green", p=0.8, outcome=0.0, binary=True
    )


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"p": 1.5, "outcome": 1.0, "binary": True}, "p must be between 0 and 1"),
        ({"p": math.nan, "outcome": 1.0, "binary": True}, "p must be between 0 and 1"),
        ({"p": 0.5, "outcome": -0.1, "binary": False}, "outcome must be between 0 and 1"),
        ({"p": 0.5, "outcome": 0.5, "binary": True}, "binary outcome is 0 or 1"),
    ],
)
def test_a_resolved_pair_holds_numbers_in_the_unit_interval(
    fields: dict[str, Any], message: str
) -> None:
    with pytest.raises(InvalidInput, match=re.escape(message)):
        Resolved(family="f", **fields)


# --- Statistics by hand.


def test_perfect_forecasts_score_zero() -> None:
    report = only(calibrate(pairs("f", [(1.0, 1.0), (0.0, 0.0), (1.0, 1.0), (0.0, 0.0)])))
    assert report.brier == 0.0 and report.ece == 0.0
    assert report.base_rate_brier == 0.25 and report.skill == 1.0
    # Every p is 0 or 1: Z's variance is 0, so there is no Z.
    assert report.spiegelhalter_z is None


def test_a_coin_forecast_on_a_fair_coin_has_no_skill() -> None:
    report = only(calibrate(pairs("f", [(0.5, 1.0), (0.5, 0.0)] * 10)))
    assert report.brier == 0.25 == report.base_rate_brier
    assert report.skill == 0.0 and report.ece == 0.0
    assert report.spiegelhalter_z is None
    assert [b.n for b in report.bins] == [0, 0, 20, 0, 0]


def test_a_small_family_by_hand() -> None:
    report = only(calibrate(pairs("f", [(0.9, 1.0), (0.9, 0.0), (0.1, 0.0), (0.3, 1.0)])))
    # (0.01 + 0.81 + 0.01 + 0.49) / 4
    assert report.brier == pytest.approx(0.33, abs=1e-15)
    assert report.base_rate_brier == 0.25
    assert report.skill == pytest.approx(1 - 0.33 / 0.25, abs=1e-15)
    # Bins [0, .2): |.1 - 0| weight 1/4; [.2, .4): |.3 - 1| weight 1/4; [.8, 1]: |.9 - .5| weight 1/2.
    assert report.ece == pytest.approx(0.025 + 0.175 + 0.2, abs=1e-15)
    # Σ(o - p)(1 - 2p) = -0.08 + 0.72 - 0.08 + 0.28; Σ(1 - 2p)²p(1 - p) = 3 * 0.0576 + 0.0336.
    assert report.spiegelhalter_z == pytest.approx(0.84 / math.sqrt(0.2064), abs=1e-12)
    assert [(b.n, b.mean_p, b.mean_o) for b in report.bins] == [
        (1, 0.1, 0.0),
        (1, 0.3, 1.0),
        (0, None, None),
        (0, None, None),
        (2, 0.9, 0.5),
    ]


def test_score_predictions_are_scored_on_the_observed_number() -> None:
    report = only(calibrate(pairs("eta", [(0.3, 0.25), (0.7, 0.75)], binary=False)))
    assert report.brier == pytest.approx(0.0025, abs=1e-15)
    assert report.base_rate_brier == pytest.approx(0.0625, abs=1e-15)
    assert report.ece == pytest.approx(0.05, abs=1e-15)
    assert report.spiegelhalter_z is None


def test_one_score_outcome_removes_z_from_a_family() -> None:
    binary = pairs("f", [(0.9, 1.0), (0.3, 0.0)])
    assert only(calibrate(binary)).spiegelhalter_z is not None
    mixed = [*binary, Resolved(family="f", p=0.3, outcome=0.0, binary=False)]
    assert only(calibrate(mixed)).spiegelhalter_z is None


def test_all_equal_outcomes_have_no_skill_rather_than_a_rounding_artefact() -> None:
    # Three outcomes of 0.1 average to a float that is not 0.1 when summed in
    # floating point; exact sums give a base rate of exactly 0.1.
    report = only(calibrate(pairs("eta", [(0.2, 0.1)] * 3, binary=False)))
    assert report.base_rate_brier == 0.0 and report.skill is None
    assert report.brier == pytest.approx(0.01, abs=1e-15)


@pytest.mark.parametrize(
    ("p", "index"),
    [
        (0.0, 0),
        (math.nextafter(0.2, 0), 0),
        (0.2, 1),
        (math.nextafter(0.4, 0), 1),
        (0.4, 2),
        (0.5, 2),
        (0.6, 3),
        (math.nextafter(0.8, 0), 3),
        (0.8, 4),
        (1.0, 4),
    ],
)
def test_bin_edges(p: float, index: int) -> None:
    report = only(calibrate(pairs("f", [(p, 1.0)])))
    assert [(b.lower, b.upper) for b in report.bins] == EDGES
    assert [b.n for b in report.bins] == [1 if i == index else 0 for i in range(5)]
    assert report.bins[index].mean_p == p


# --- Statistics against the reference on random data.


@settings(max_examples=300, deadline=None)
@given(data=st.lists(resolved(), min_size=1, max_size=40))
def test_every_statistic_matches_the_reference(data: list[Resolved]) -> None:
    report = only(calibrate(data))
    assert report.family == "f" and report.n == len(data)
    assert report.brier == float(ref_brier(data))
    base = ref_base_rate_brier(data)
    assert report.base_rate_brier == float(base)
    if float(base) == 0:
        assert report.skill is None
    else:
        skill = 1 - ref_brier(data) / base
        assert report.skill == (float(skill) if skill >= -sys.float_info.max else -math.inf)
    assert report.ece == float(ref_ece(data))
    assert sum(b.n for b in report.bins) == report.n
    for index, b in enumerate(report.bins):
        inside = [r for r in data if ref_bin(r.p) == index]
        assert (b.lower, b.upper, b.n) == (*EDGES[index], len(inside))
        if inside:
            assert b.mean_p == float(sum(Fraction(r.p) for r in inside) / len(inside))
            assert b.mean_o == float(sum(Fraction(r.outcome) for r in inside) / len(inside))
        else:
            assert b.mean_p is None and b.mean_o is None


@settings(max_examples=300, deadline=None)
@given(data=st.lists(resolved(binary=True), min_size=1, max_size=40))
def test_spiegelhalter_z_matches_the_reference(data: list[Resolved]) -> None:
    z = only(calibrate(data)).spiegelhalter_z
    numerator, variance = ref_z_parts(data)
    if variance == 0:
        assert z is None
    else:
        assert z is not None
        assert math.isclose(z, float(numerator) / math.sqrt(variance), rel_tol=1e-12)


@settings(max_examples=100, deadline=None)
@given(data=st.lists(resolved(families=("a", "b", "c")), max_size=30), seed=st.integers(0, 2**32))
def test_a_report_does_not_depend_on_the_order_of_predictions(
    data: list[Resolved], seed: int
) -> None:
    shuffled = data[:]
    random.Random(seed).shuffle(shuffled)
    assert calibrate(shuffled) == calibrate(data)


def test_spiegelhalter_z_is_small_for_a_calibrated_forecaster() -> None:
    rng = random.Random(20240601)
    data = []
    for _ in range(2000):
        p = rng.random()
        data.append(Resolved(family="f", p=p, outcome=float(rng.random() < p), binary=True))
    report = only(calibrate(data))
    assert report.spiegelhalter_z is not None and abs(report.spiegelhalter_z) < 4
    assert report.skill is not None and report.skill > 0
    assert report.measurable and report.note == ""


def test_spiegelhalter_z_is_large_for_an_overconfident_forecaster() -> None:
    rng = random.Random(20240602)
    data = []
    for _ in range(2000):
        q = rng.uniform(0.3, 0.7)
        p = 0.95 if q > 0.5 else 0.05
        data.append(Resolved(family="f", p=p, outcome=float(rng.random() < q), binary=True))
    report = only(calibrate(data))
    assert report.spiegelhalter_z is not None and report.spiegelhalter_z > 10
    assert report.skill is not None and report.skill < 0


def test_spiegelhalter_z_is_negative_for_an_underconfident_forecaster() -> None:
    rng = random.Random(20240603)
    data = []
    for _ in range(2000):
        q = rng.choice([0.05, 0.95])
        p = 0.6 if q > 0.5 else 0.4
        data.append(Resolved(family="f", p=p, outcome=float(rng.random() < q), binary=True))
    z = only(calibrate(data)).spiegelhalter_z
    assert z is not None and z < -10


# --- Measurability and notes.


def test_a_family_becomes_measurable_at_fifty_outcomes() -> None:
    assert MEASURABLE_AT == 50
    below = only(calibrate(pairs("f", [(0.7, 1.0)] * 49)))
    assert not below.measurable
    assert below.note == "not yet measurable: 49 of 50 outcomes, 1 more needed"
    # Numbers are reported below the threshold all the same.
    assert below.brier == pytest.approx(0.09, abs=1e-15)
    at = only(calibrate(pairs("f", [(0.7, 1.0)] * 50)))
    assert at.measurable and at.note == ""


def test_a_family_without_outcomes_has_no_numbers() -> None:
    report = only(calibrate([], family="ci.green"))
    assert report.family == "ci.green" and report.n == 0 and not report.measurable
    numbers = (report.brier, report.base_rate_brier, report.skill, report.ece)
    assert numbers == (None, None, None, None) and report.spiegelhalter_z is None
    assert [(b.lower, b.upper) for b in report.bins] == EDGES
    assert all(b.n == 0 and b.mean_p is None and b.mean_o is None for b in report.bins)
    assert "no resolved predictions" in report.note


# --- Families and prefixes.

MIXED = [
    *pairs("release.day", [(0.6, 1.0), (0.6, 0.0)]),
    *pairs("ci.time", [(0.2, 0.0)]),
    *pairs("ci.green", [(0.9, 1.0), (0.8, 1.0), (0.3, 0.0)]),
    *pairs("cinema", [(0.5, 1.0)]),
]


def test_one_report_per_family_sorted_by_name() -> None:
    reports = calibrate(MIXED)
    assert [(r.family, r.n) for r in reports] == [
        ("ci.green", 3),
        ("ci.time", 1),
        ("cinema", 1),
        ("release.day", 2),
    ]
    assert calibrate([]) == []


def test_a_family_filter_reports_only_that_family() -> None:
    report = only(calibrate(MIXED, family="ci.green"))
    assert report == calibrate(MIXED)[0]
    assert only(calibrate(MIXED, family="ci")).n == 0


def test_a_prefix_reports_its_aggregate_first_then_each_family() -> None:
    reports = calibrate(MIXED, family_prefix="ci.")
    assert [(r.family, r.n) for r in reports] == [("ci.*", 4), ("ci.green", 3), ("ci.time", 1)]
    pooled = [msgspec.structs.replace(r, family="ci.*") for r in MIXED if r.family[:3] == "ci."]
    assert reports[0] == only(calibrate(pooled))
    assert reports[1:] == [r for r in calibrate(MIXED) if r.family.startswith("ci.")]
    # The aggregate's Brier score is the n-weighted mean of its families'.
    green, time = reports[1], reports[2]
    assert green.brier is not None and time.brier is not None
    assert reports[0].brier == pytest.approx((3 * green.brier + 1 * time.brier) / 4, abs=1e-15)


def test_a_prefix_without_families_still_reports_an_empty_aggregate() -> None:
    report = only(calibrate(MIXED, family_prefix="deploy."))
    assert report.family == "deploy.*" and report.n == 0


@settings(max_examples=100, deadline=None)
@given(data=st.lists(resolved(families=("ci.a", "ci.b", "cia", "x")), max_size=60))
def test_a_prefix_aggregate_pools_exactly_its_families(data: list[Resolved]) -> None:
    aggregate, *families = calibrate(data, family_prefix="ci.")
    matching = [r for r in data if r.family in ("ci.a", "ci.b")]
    assert aggregate.family == "ci.*" and aggregate.n == len(matching)
    assert aggregate.n == sum(r.n for r in families)
    assert [r.family for r in families] == sorted({r.family for r in matching})
    assert aggregate.measurable == (len(matching) >= MEASURABLE_AT)
    for b, index in zip(aggregate.bins, range(5), strict=True):
        assert b.n == sum(f.bins[index].n for f in families)


def test_family_and_prefix_together_are_refused() -> None:
    with pytest.raises(InvalidInput, match="not both"):
        calibrate(MIXED, family="ci.green", family_prefix="ci.")


def test_skill_beyond_the_float_range_is_minus_infinity() -> None:
    # Outcomes 1e-160 apart: the base-rate Brier score is a positive subnormal.
    report = only(calibrate(pairs("eta", [(0.5, 0.0), (0.5, 1e-160)], binary=False)))
    assert report.base_rate_brier is not None and 0 < report.base_rate_brier < 1e-300
    assert report.skill == -math.inf
    tinier = only(calibrate(pairs("eta", [(0.5, 0.0), (0.5, 1e-200)], binary=False)))
    assert tinier.base_rate_brier == 0.0 and tinier.skill is None
