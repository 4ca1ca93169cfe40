"""The commands that write and read memory: remember, recall, show, conflicts, history,
commitments, fulfill."""

import argparse
import sys

from hikmah.model.deadlines import DEADLINE_FORMS
from hikmah.model.vocabulary import PRIVACIES, REMEMBERED_KINDS

from . import render_learning, render_memory
from .command import (
    ALLOW_PAST,
    AS_OF,
    KIND_FILTER,
    SCOPE_HELP,
    Command,
    Request,
    arg,
    check_deadline,
    dest,
    given,
    pick,
)
from .session import UsageError

# The flags of remember that each fill the param of their own name (the others are
# content, kind and tags).
WRITE_FLAGS = (
    arg("--salience", type=float, metavar="F", help="0..1, default 0.5"),
    arg("--confidence", type=float, metavar="F", help="0..1, default 0.5"),
    arg(
        "--source",
        metavar="S",
        help="kind:name, e.g. doc:runbook (default: yours, human:<login>)",
    ),
    arg("--locator", metavar="L", help="where in the source (file:line, URL)"),
    arg("--authority", type=float, metavar="F", help="0..1, default 0.5"),
    arg("--verified", action="store_true", help="a person checked it (never agents)"),
    arg("--claim-key", metavar="K", help="structured claim key (with --claim-value)"),
    arg("--claim-value", metavar="V", help="structured claim value"),
    arg("--supersedes", metavar="ID", help="the trace this one corrects"),
    arg("--deadline", metavar="D", help=f"when it is due: {DEADLINE_FORMS}"),
    arg("--privacy", choices=PRIVACIES, help="default private"),
    arg("--scope", metavar="S", help=SCOPE_HELP),
    arg("--fulfills", metavar="ID", help="(an outcome) the commitment it reports done"),
)


def _remember(args: argparse.Namespace) -> Request:
    content = pick(args, "content")
    if content is None and not sys.stdin.isatty():
        content = sys.stdin.read()
    if content is None:
        raise UsageError("say what to remember: hikmah remember 'TEXT' (or --content, or stdin)")
    check_deadline(args)
    params = {"content": content, "kind": args.kind, "tags": args.tag}
    return "memory.remember", {**params, **given(args, *map(dest, WRITE_FLAGS))}


def _recall(args: argparse.Namespace) -> Request:
    params = {"query": pick(args, "query") or "", "tags": args.tag, "kinds": args.kind}
    flags = given(
        args, "limit", "scope", "include_superseded", "include_sensitive", "focus", "as_of"
    )
    return "memory.recall", {**params, **flags}


def _fulfill(args: argparse.Namespace) -> Request:
    trace_id = pick(args, "id")
    if trace_id is None:
        raise UsageError("say which commitment: hikmah fulfill --id ID")
    return "memory.fulfill", {"id": trace_id}


COMMANDS: tuple[Command, ...] = (
    Command(
        "remember",
        "write a trace",
        (
            arg("content_arg", nargs="?", metavar="CONTENT", help="what to remember"),
            arg("--content", help="what to remember (or give it positionally, or on stdin)"),
            arg(
                "--kind",
                default="observation",
                choices=REMEMBERED_KINDS,
                help="default observation",
            ),
            arg("--tag", action="append", default=[], metavar="T", help="a tag (repeatable)"),
            *WRITE_FLAGS,
            ALLOW_PAST,
        ),
        _remember,
        render_learning.remembered,
        person=lambda a: a.verified,
    ),
    Command(
        "recall",
        "recall the traces that resonate with a query",
        (
            arg("query_arg", nargs="?", metavar="QUERY", help="words to recall by"),
            arg("--query", help="words to recall by (or give them positionally)"),
            arg("--tag", action="append", default=[], metavar="T", help="a tag cue (repeatable)"),
            KIND_FILTER,
            arg("--limit", type=int, metavar="N", help="most results (capped by the policy)"),
            arg("--scope", metavar="S", help="this scope and global only"),
            arg("--include-superseded", action="store_true", help="history too"),
            arg("--include-sensitive", action="store_true", help="sensitive traces too"),
            arg("--focus", metavar="NAME", help="absorb the results into this focus capsule"),
            AS_OF,
        ),
        _recall,
        render_memory.recalled,
    ),
    Command(
        "show",
        "one trace with its history",
        (arg("id", metavar="ID"), AS_OF),
        lambda a: ("memory.show", {"id": a.id, **given(a, "as_of")}),
        render_memory.shown,
    ),
    Command(
        "conflicts",
        "open conflicts: one claim key, several values",
        (arg("--key", metavar="K", help="only the conflict on this claim key"), AS_OF),
        lambda a: ("memory.conflicts", given(a, "key", "as_of")),
        render_memory.conflicts,
    ),
    Command(
        "history",
        "every value a claim key was given: who set each, when, until when",
        (arg("key", metavar="CLAIM_KEY"), AS_OF),
        lambda a: ("memory.history", {"key": a.key, **given(a, "as_of")}),
        render_memory.claim_history,
    ),
    Command(
        "commitments",
        "the promise queue, soonest first",
        (
            arg("--within-hours", type=float, metavar="H", help="due within H hours"),
            arg("--overdue", action="store_true", help="only overdue ones"),
            AS_OF,
        ),
        lambda a: (
            "promises.list",
            {"overdue": a.overdue, **given(a, "within_hours", "as_of")},
        ),
        render_memory.commitments,
    ),
    Command(
        "fulfill",
        "mark a commitment done",
        (
            arg("id_arg", nargs="?", metavar="ID"),
            arg("--id", help="the commitment (or give it positionally)"),
        ),
        _fulfill,
        render_memory.fulfilled,
    ),
)
