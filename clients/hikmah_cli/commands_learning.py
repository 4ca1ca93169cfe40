"""The commands of learning and correction: predictions and outcomes, calibration,
proposals, feedback, pins, invalidation, verification and the review of what agents wrote."""

import argparse
import sys
from typing import TYPE_CHECKING

from hikmah.model.deadlines import DEADLINE_FORMS
from hikmah.model.display import visible
from hikmah.model.vocabulary import PREDICTION_TYPES

from . import render_learning
from .command import (
    ALLOW_PAST,
    KIND_FILTER,
    SCOPE_HELP,
    Command,
    OneOf,
    Request,
    always,
    arg,
    check_deadline,
    given,
)
from .session import OK, Exit, UsageError, call

if TYPE_CHECKING:  # the replies' types, for mypy only: the CLI reads replies as Reply
    from hikmah.model.wire.learning import InvalidateResult
    from hikmah.model.wire.memory import ShowResult, VerifyResult


def _predict(args: argparse.Namespace) -> Request:
    check_deadline(args)
    params = {"family": args.family, "question": args.question, "type": args.type, "p": args.p}
    if args.answer_space:
        params["answer_space"] = [a.strip() for a in args.answer_space.split(",")]
    return "memory.predict", {**params, **given(args, "value", "source", "scope", "deadline")}


def _invalidate(args: argparse.Namespace) -> Request:
    params = {"pattern": args.pattern, "tags": args.tag, "reason": args.reason, "stale": args.stale}
    dry = {**params, "dry_run": True}
    if args.dry_run:
        return "memory.invalidate", dry
    preview: InvalidateResult = call(args, "memory.invalidate", dry)
    if not preview.matched:
        return "memory.invalidate", dry
    print(visible(render_learning.invalidated(preview)), file=sys.stderr)
    if not args.yes:
        if not sys.stdin.isatty():
            raise UsageError("not a terminal: check the list above, then rerun with --yes")
        answer = input(f"Supersede these {len(preview.matched)} traces? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            raise Exit(OK)
    return "memory.invalidate", params


def _verify_traces(args: argparse.Namespace) -> Request:
    params = {"source": args.source, "kinds": args.kind, **given(args, "scope")}
    preview: VerifyResult = call(args, "memory.verify", params)
    if not preview.matched:
        return "memory.verify", params
    print(visible(render_learning.verify_preview(preview, args.source)), file=sys.stderr)
    if not sys.stdin.isatty():
        raise UsageError("verifying needs you at a terminal to confirm what you checked")
    answer = input(f"Verify these {preview.matched} traces as checked by you? [y/N] ")
    if answer.strip().lower() not in ("y", "yes"):
        raise Exit(OK)
    return "memory.verify", {**params, "confirm": preview.selection}


REVIEW_ACTIONS = ("accept", "reject", "edit")


def _review(args: argparse.Namespace) -> Request:
    if args.action is None:
        if args.ids:
            raise UsageError(f"no review action {args.ids[0]!r}: {', '.join(REVIEW_ACTIONS)}")
        return "review.list", given(args, "limit")
    if not args.ids:
        raise UsageError(f"say which: hikmah review {args.action} ID…")
    if args.action == "reject":
        if args.reason is None:
            raise UsageError("say why: hikmah review reject ID… --reason TEXT")
        return "review.reject", {"ids": args.ids, "reason": args.reason}
    if args.action == "accept":
        return "review.accept", {"ids": args.ids}
    if len(args.ids) != 1:
        raise UsageError("edit one at a time: hikmah review edit ID")
    from . import editor  # noqa: PLC0415 -- only an edit opens an editor

    shown: ShowResult = call(args, "memory.show", {"id": args.ids[0]})
    original = shown.trace.content
    edited = editor.edit(original)
    if not edited.strip():
        raise UsageError("the text is empty: nothing was accepted")
    content = None if edited == original else edited
    return "review.accept", {"ids": args.ids, **({} if content is None else {"content": content})}


COMMANDS: tuple[Command, ...] = (
    Command(
        "predict",
        "record a forecast, to be resolved by an outcome",
        (
            arg("--family", required=True, metavar="F", help="what it forecasts, e.g. ci.green"),
            arg("--question", required=True, metavar="Q", help="the forecast, in words"),
            arg(
                "--type",
                required=True,
                choices=PREDICTION_TYPES,
                help="noul: will it happen (outcome yes/no); choice: which of --answer-space;"
                " score: a number in 0..1",
            ),
            arg("--p", required=True, type=float, metavar="P", help="probability, 0..1"),
            arg("--value", metavar="V", help="(choice) the answer forecast"),
            arg("--answer-space", metavar="A,B", help="(choice) the possible answers"),
            arg("--source", metavar="S", help="who forecasts, e.g. human:ana, agent:claude"),
            arg("--scope", metavar="S", help=SCOPE_HELP),
            arg("--deadline", metavar="D", help=f"when the outcome is known: {DEADLINE_FORMS}"),
            ALLOW_PAST,
        ),
        _predict,
        render_learning.remembered,
    ),
    Command(
        "outcome",
        "resolve a prediction, once, with what was observed",
        (
            arg("--prediction", required=True, metavar="ID", help="the prediction"),
            arg("--observed", required=True, metavar="V", help="yes/no, an answer, a score"),
            arg("--source", metavar="S", help="who observed it (never a model: source)"),
            arg("--note", metavar="N", help="what happened, in words"),
        ),
        lambda a: ("memory.outcome", given(a, "prediction", "observed", "source", "note")),
        render_learning.resolved,
    ),
    Command(
        "calibration",
        "how well forecasts matched outcomes, per family",
        (
            OneOf(
                (
                    arg("--family", metavar="F", help="only this family"),
                    arg(
                        "--family-prefix", metavar="P", help="families starting with P, pooled too"
                    ),
                )
            ),
        ),
        lambda a: ("memory.calibration", given(a, "family", "family_prefix")),
        render_learning.calibration,
    ),
    Command(
        "consolidate",
        "proposals of durable beliefs (never writes)",
        request=lambda a: ("replay.consolidate", {}),
        show=render_learning.proposals,
    ),
    Command(
        "promote",
        "write the belief a current proposal describes",
        (
            arg("id", metavar="PROPOSAL", help="a proposal id from consolidate (pr_…)"),
            arg("--verified", action="store_true", help="you checked it (never agents)"),
            arg("--source", metavar="S", help="who promotes it (default: yours, human:<login>)"),
        ),
        lambda a: ("replay.promote", {"id": a.id, "verified": a.verified, **given(a, "source")}),
        render_learning.remembered,
        person=lambda a: a.verified,
    ),
    Command(
        "feedback",
        "a recalled trace you acted on led to a good or bad outcome",
        (
            arg("outcome", choices=["good", "bad"]),
            arg("ids", nargs="+", metavar="ID", help="the traces acted on"),
        ),
        lambda a: ("memory.feedback", {"ids": a.ids, "outcome": a.outcome}),
        render_learning.fed_back,
    ),
    *(
        Command(
            verb,
            help_text,
            (arg("id", metavar="ID"),),
            lambda a: (f"memory.{a.command}", {"id": a.id}),
            render_learning.pinned,
        )
        for verb, help_text in (
            ("pin", "keep a trace at full weight in recall (no decay, no bad feedback)"),
            ("unpin", "let a pinned trace age again"),
        )
    ),
    Command(
        "invalidate",
        "supersede every active trace matching a pattern (shows the list first)",
        (
            arg("pattern", metavar="PATTERN", help="text the traces contain (any case)"),
            arg("--tag", action="append", default=[], metavar="T", help="and carry this tag"),
            arg("--reason", required=True, help="why they no longer hold (kept in each)"),
            arg("--stale", action="store_true", help="keep them recallable, marked stale"),
            arg("--dry-run", action="store_true", help="only show what would be superseded"),
            arg("--yes", action="store_true", help="do not ask for confirmation"),
        ),
        _invalidate,
        render_learning.invalidated,
        person=lambda a: not a.dry_run,
    ),
    Command(
        "verify",
        "verify the unverified traces of a source you checked, such as an import (a person"
        " only; shows them and asks first)",
        (
            arg("--source", required=True, metavar="S", help="their source, e.g. tool:mem0"),
            arg("--scope", metavar="S", help="only in this scope"),
            KIND_FILTER,
        ),
        _verify_traces,
        render_learning.vouched,
        person=always,
        description="Verify every active, unverified trace whose provenance source is S (an"
        " import's is tool:<tool>, e.g. tool:mem0), optionally only in one scope or of some"
        " kinds: each is superseded by a verified copy that keeps its text, kind, claim,"
        " scope, time and locator. It lists them and asks you on the terminal first, and"
        " verifies exactly what it listed. Agent sessions are refused. A later import of a"
        " record you verified leaves your verified trace alone.",
    ),
    Command(
        "review",
        "what agents wrote that waits for you before any agent reads it: list, accept,"
        " reject, edit",
        (
            arg("action", nargs="?", choices=REVIEW_ACTIONS, help="nothing: list what waits"),
            arg("ids", nargs="*", metavar="ID", help="the held traces to decide"),
            arg("--reason", metavar="TEXT", help="(reject) why: kept in the rejection"),
            arg("--limit", type=int, metavar="N", help="list at most N (default 100)"),
        ),
        _review,
        {
            "review.list": render_learning.review_inbox,
            "review.accept": render_learning.reviewed,
            "review.reject": render_learning.reviewed,
        },
        description="An agent's preference, constraint or procedure, and any agent note that"
        " reads as instructions to an agent (quarantined, with the rule that caught it),"
        " waits for you: no agent reads it until you accept it. `hikmah review` lists what"
        " waits, newest first. `accept ID…` writes a verified copy of each that supersedes"
        " it; `edit ID` opens $EDITOR on its text and accepts what you save; `reject ID…"
        " --reason TEXT` supersedes each by a rejection, and no agent ever reads it. A person"
        " only: agent sessions are refused. [review] in the policy says what is held."
        " See docs/security.md.",
        person=lambda a: a.action is not None,
    ),
)
