"""The tools by which memory learns from an agent: forecasts and their outcomes, which
calibrate later forecasts, and feedback on recalled memories, which weighs recall."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from msgspec import Meta

from hikmah.model.wire.learning import OutcomeResult, PredictResult

from .framework import ADDS, ONCE, Args, Memory, TraceId, given, tool

# The agent says yes_no; the daemon's wire name for a yes/no (Bernoulli) forecast is noul.
FORECAST_TYPES = {"yes_no": "noul", "choice": "choice", "score": "score"}


class Predict(Args):
    """Record a forecast before acting, so that its outcome can calibrate later ones. A
    forecast is never verified; an outcome resolves it once."""

    family: Annotated[str, Meta(description="What kind of forecast, e.g. ci.green.")]
    question: Annotated[str, Meta(description="The forecast in words.")]
    type: Annotated[
        Literal["yes_no", "choice", "score"],
        Meta(
            description="yes_no: will it happen (resolved yes or no); choice: which of"
            " answer_space (give value); score: a number from 0 to 1."
        ),
    ]
    p: Annotated[float, Meta(ge=0, le=1, description="Your probability, 0 to 1.")]
    value: Annotated[str | None, Meta(description="(choice) your answer.")] = None
    answer_space: Annotated[
        list[str] | None, Meta(description="(choice) the possible answers.")
    ] = None
    deadline: Annotated[str | None, Meta(description="When the outcome should be known.")] = None


@tool(Predict, ADDS, "Record a forecast")
def predict(memory: Memory, args: Predict) -> str:
    params: dict[str, Any] = {
        "family": args.family,
        "question": args.question,
        "type": FORECAST_TYPES[args.type],
        "p": args.p,
        "answer_space": args.answer_space or [],
        "source": memory.writer.source,
        "scope": memory.project,
        **given(value=args.value, deadline=args.deadline),
    }
    trace = memory.call("memory.predict", params, PredictResult).trace
    return (
        f"Recorded prediction {trace.id} ({args.family}, p={args.p:.2f}); resolve it with outcome."
    )


class Outcome(Args):
    """Resolve a prediction with what was actually observed (once)."""

    prediction: TraceId
    observed: Annotated[
        str, Meta(description="yes or no (yes_no), one answer (choice), or a number 0 to 1.")
    ]
    note: Annotated[str | None, Meta(description="What happened, in words.")] = None


@tool(Outcome, ONCE, "Resolve a forecast")
def outcome(memory: Memory, args: Outcome) -> str:
    params = {
        "prediction": args.prediction,
        "observed": args.observed,
        "source": memory.writer.source,
        **given(note=args.note),
    }
    trace = memory.call("memory.outcome", params, OutcomeResult).trace
    return f"Resolved {args.prediction} with outcome {trace.id} ({args.observed})."


class Feedback(Args):
    """Report that memories you recalled and acted on led to a good or a bad outcome.
    Recall then weighs them a little more or less (it never makes an irrelevant one
    appear)."""

    ids: Annotated[
        list[str],
        Meta(min_length=1, max_length=20, description="Recalled memory ids you acted on."),
    ]
    outcome: Annotated[
        Literal["good", "bad"], Meta(description="good: it helped; bad: it misled you.")
    ]


@tool(Feedback, ADDS, "Feedback on recalled memories")
def feedback(memory: Memory, args: Feedback) -> str:
    memory.call("memory.feedback", {"ids": args.ids, "outcome": args.outcome})
    return f"Recorded a {args.outcome} outcome for {', '.join(args.ids)}."
