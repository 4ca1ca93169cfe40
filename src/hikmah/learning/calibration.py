"""How well forecasts match their outcomes, per family of predictions (pure).

A resolved prediction is a pair (p, o): the forecast probability or score p
and the outcome o, 1 or 0 for a noul or choice prediction, the observed
number in [0, 1] for a score prediction (:func:`resolved_pair`).
:func:`calibrate` reports, over the n pairs of a family:

- Brier score (Brier 1950): ``brier = (1/n) Σ (p - o)²``.
- Base-rate Brier score: the Brier score of always forecasting ō, the mean
  outcome of these n, ``(1/n) Σ (ō - o)²``; skill is
  ``1 - brier / base_rate_brier`` (the Brier skill score against the base rate).
- Expected calibration error (Naeini et al. 2015; Guo et al. 2017), over the 5
  equal-width bins of p: ``ece = Σ_b (n_b / n) |mean p_b - mean o_b|``.
- Spiegelhalter's Z (Spiegelhalter 1986, "Probabilistic prediction in patient
  management and clinical trials"), for binary outcomes only:
  ``Z = Σ (o - p)(1 - 2p) / √(Σ (1 - 2p)² p (1 - p))``, about N(0, 1) when
  the forecasts are calibrated; large and positive when they are overconfident.

Every sum is computed exactly in rationals (:class:`fractions.Fraction`, of
the floats as given) and rounded once at the end, so a report does not depend
on the order of its predictions, and a family whose outcomes are all equal
has a base-rate Brier score of exactly 0 (and no skill). A family is measurable at
:data:`MEASURABLE_AT` outcomes (the reference implementation's bar); below that the
numbers are still reported, with a note saying how many outcomes are missing.
"""

from __future__ import annotations

import bisect
import itertools
import math
import sys
from collections.abc import Iterable, Sequence
from fractions import Fraction

import msgspec

from hikmah.model.errors import InvalidInput, ProvenanceRefused
from hikmah.model.trace import Trace, is_model_source
from hikmah.model.wire.learning import Bin, FamilyCalibration

MEASURABLE_AT = 50

# Bins are [0, 0.2), [0.2, 0.4), [0.4, 0.6), [0.6, 0.8), [0.8, 1.0]. The inner
# edges are compared as the floats written here, so a forecast written as
# p = 0.6 lands in [0.6, 0.8) even though the float 0.6 is a hair below 3/5.
BIN_EDGES: tuple[float, ...] = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)


class Resolved(msgspec.Struct, frozen=True, kw_only=True):
    """One prediction and the outcome that resolved it, as numbers.

    Raises:
        InvalidInput: p or the outcome is not a number in [0, 1], or a binary
            outcome is neither 0 nor 1.
    """

    family: str
    # The forecast probability (noul, choice) or score (score).
    p: float
    # 1.0 or 0.0 for noul and choice predictions; the observed number for score.
    outcome: float
    # False for score predictions, whose outcome may lie anywhere in [0, 1].
    binary: bool

    def __post_init__(self) -> None:
        if not 0.0 <= self.p <= 1.0:
            raise InvalidInput(f"a forecast p must be between 0 and 1, not {self.p}")
        if not 0.0 <= self.outcome <= 1.0:
            raise InvalidInput(f"an outcome must be between 0 and 1, not {self.outcome}")
        if self.binary and self.outcome not in (0.0, 1.0):
            raise InvalidInput(f"a binary outcome is 0 or 1, not {self.outcome}")


def resolved_pair(prediction: Trace, outcome: Trace) -> Resolved:
    """The numbers a prediction and its resolving outcome stand for.

    Raises:
        InvalidInput: ``prediction`` is not a complete prediction, or the
            observed value does not fit it.
        ProvenanceRefused: the outcome comes from a ``model:`` source.
    """
    if (
        prediction.kind != "prediction"
        or prediction.family is None
        or prediction.prediction_type is None
        or prediction.probability is None
    ):
        raise InvalidInput(f"{prediction.id} is not a prediction with a family, type and p")
    check_resolution(prediction, outcome)
    observed = outcome.value
    assert observed is not None  # check_resolution refuses an outcome without one
    p = prediction.probability
    if prediction.prediction_type == "noul":
        hit = observed == "yes"
        return Resolved(family=prediction.family, p=p, outcome=float(hit), binary=True)
    if prediction.prediction_type == "choice":
        hit = observed == prediction.value
        return Resolved(family=prediction.family, p=p, outcome=float(hit), binary=True)
    return Resolved(family=prediction.family, p=p, outcome=float(observed), binary=False)


def calibrate(
    resolved: Iterable[Resolved],
    *,
    family: str | None = None,
    family_prefix: str | None = None,
) -> list[FamilyCalibration]:
    """Calibration reports, one per family, sorted by family.

    Args:
        resolved: every resolved prediction to consider.
        family: report this family only (a report with n = 0 if it has no outcomes).
        family_prefix: report each family starting with the prefix, preceded by
            one aggregate report over all of them named ``prefix + "*"``.

    Raises:
        InvalidInput: both ``family`` and ``family_prefix`` are given.
    """
    if family is not None and family_prefix is not None:
        raise InvalidInput("give a family or a family prefix, not both")
    by_family: dict[str, list[Resolved]] = {}
    for pair in resolved:
        by_family.setdefault(pair.family, []).append(pair)
    if family is not None:
        return [_report(family, by_family.get(family, []))]
    if family_prefix is None:
        return [_report(name, by_family[name]) for name in sorted(by_family)]
    names = sorted(name for name in by_family if name.startswith(family_prefix))
    pooled = [pair for name in names for pair in by_family[name]]
    aggregate = _report(f"{family_prefix}*", pooled)
    return [aggregate, *(_report(name, by_family[name]) for name in names)]


def bin_index(p: float) -> int:
    """The bin of a forecast p in [0, 1]: 0 for [0, 0.2) up to 4 for [0.8, 1.0]."""
    return min(bisect.bisect_right(BIN_EDGES, p) - 1, len(BIN_EDGES) - 2)


def _sum(values: Iterable[Fraction]) -> Fraction:
    return sum(values, Fraction(0))


def _mean(values: Sequence[float]) -> Fraction:
    return _sum(Fraction(value) for value in values) / len(values)


def _report(name: str, pairs: Sequence[Resolved]) -> FamilyCalibration:
    n = len(pairs)
    members: list[list[Resolved]] = [[] for _ in BIN_EDGES[1:]]
    for pair in pairs:
        members[bin_index(pair.p)].append(pair)
    bins = [
        Bin(
            lower=lower,
            upper=upper,
            n=len(inside),
            mean_p=float(_mean([pair.p for pair in inside])) if inside else None,
            mean_o=float(_mean([pair.outcome for pair in inside])) if inside else None,
        )
        for (lower, upper), inside in zip(itertools.pairwise(BIN_EDGES), members, strict=True)
    ]
    if n == 0:
        return FamilyCalibration(
            family=name,
            n=0,
            measurable=False,
            brier=None,
            base_rate_brier=None,
            skill=None,
            ece=None,
            spiegelhalter_z=None,
            bins=bins,
            note="no resolved predictions yet",
        )
    ps = [Fraction(pair.p) for pair in pairs]
    os = [Fraction(pair.outcome) for pair in pairs]
    brier = _sum((p - o) ** 2 for p, o in zip(ps, os, strict=True)) / n
    base_rate = _sum(os) / n
    base_rate_brier = _sum((base_rate - o) ** 2 for o in os) / n
    ece = _sum(
        Fraction(len(inside), n)
        * abs(_mean([pair.p for pair in inside]) - _mean([pair.outcome for pair in inside]))
        for inside in members
        if inside
    )
    # Z tests binary outcomes against their forecast probabilities; a score
    # outcome is no Bernoulli draw, so a family with one has no Z.
    binary = all(pair.binary for pair in pairs)
    measurable = n >= MEASURABLE_AT
    note = (
        ""
        if measurable
        else f"not yet measurable: {n} of {MEASURABLE_AT} outcomes, {MEASURABLE_AT - n} more needed"
    )
    return FamilyCalibration(
        family=name,
        n=n,
        measurable=measurable,
        brier=float(brier),
        base_rate_brier=float(base_rate_brier),
        skill=_skill(brier, base_rate_brier),
        ece=float(ece),
        spiegelhalter_z=_spiegelhalter_z(ps, os) if binary else None,
        bins=bins,
        note=note,
    )


def _skill(brier: Fraction, base_rate_brier: Fraction) -> float | None:
    # Only when the reported base-rate score is positive. Outcomes a few ulps
    # apart make the exact skill astronomically negative, beyond any float.
    if float(base_rate_brier) == 0.0:
        return None
    skill = 1 - brier / base_rate_brier
    return float(skill) if skill >= -sys.float_info.max else -math.inf


def _spiegelhalter_z(ps: list[Fraction], os: list[Fraction]) -> float | None:
    # The variance is 0 when every p is 0, 0.5 or 1: Z is undefined there.
    variance = float(_sum((1 - 2 * p) ** 2 * p * (1 - p) for p in ps))
    if variance <= 0.0:
        return None
    numerator = _sum((o - p) * (1 - 2 * p) for p, o in zip(ps, os, strict=True))
    return float(numerator) / math.sqrt(variance)


def check_resolution(prediction: Trace, outcome: Trace) -> None:
    """Whether ``outcome`` may resolve ``prediction`` (an active prediction, checked by the caller).

    The observed value is ``yes``/``no`` for a noul prediction (did the
    forecast event happen), one of the answer space for a choice, a number in
    [0, 1] for a score.

    Raises:
        ProvenanceRefused: a ``model:`` source never resolves a prediction.
        InvalidInput: the observed value does not fit the prediction.
    """
    if is_model_source(outcome.provenance.source):
        raise ProvenanceRefused(
            "a model: source cannot resolve a prediction: model output never grades itself"
        )
    observed = outcome.value
    if observed is None:
        raise InvalidInput("an outcome resolving a prediction needs the observed value")
    if prediction.prediction_type == "noul" and observed not in ("yes", "no"):
        raise InvalidInput("a noul prediction is resolved with observed yes or no")
    if prediction.prediction_type == "choice" and observed not in prediction.answer_space:
        raise InvalidInput(
            f"observed must be one of the answer space: {', '.join(prediction.answer_space)}"
        )
    if prediction.prediction_type == "score" and not _is_unit_number(observed):
        raise InvalidInput("a score prediction is resolved with a number between 0 and 1")


def _is_unit_number(text: str) -> bool:
    try:
        number = float(text)
    except ValueError:
        return False
    return math.isfinite(number) and 0.0 <= number <= 1.0
