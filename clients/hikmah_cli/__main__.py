"""``hikmah``: remember, recall and audit memory from the shell.

Exit codes: 0 success, 1 internal error, 2 usage error, 3 refused (secret,
agent-session restriction, policy, provenance, conflict), 4 not found,
5 daemon unavailable.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from hikmah import paths

from . import render
from .client import RemoteError, Unavailable, connect, environment_flags

OK, INTERNAL, USAGE, REFUSED, NOT_FOUND, UNAVAILABLE = 0, 1, 2, 3, 4, 5
EXIT_FOR_REASON = {
    "invalid": USAGE,
    "secret_detected": REFUSED,
    "agent_restricted": REFUSED,
    "policy": REFUSED,
    "provenance": REFUSED,
    "conflict": REFUSED,
    "forbidden": REFUSED,
    "too_large": USAGE,
    "not_found": NOT_FOUND,
    "unavailable": UNAVAILABLE,
}
KINDS = [
    "observation", "episode", "belief", "procedure", "commitment",
    "preference", "constraint", "outcome", "correction", "prediction",
]  # fmt: skip

REMEMBER_OPTIONS = (
    "salience", "confidence", "source", "locator", "authority", "claim_key",
    "claim_value", "supersedes", "deadline", "privacy", "scope", "fulfills",
)  # fmt: skip

Handler = Callable[[argparse.Namespace], tuple[str, dict[str, Any], Callable[[Any], str]]]


def _global_options(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    """The flags accepted before or after the subcommand."""
    default: Any = argparse.SUPPRESS if suppress else None
    group = parser.add_argument_group("global options")
    group.add_argument("--socket", metavar="PATH", default=default, help="daemon socket")
    group.add_argument("--data-dir", metavar="DIR", default=default, help="data directory")
    group.add_argument("--policy", metavar="FILE", default=default, help="policy file")
    group.add_argument(
        "--json",
        action="store_true",
        default=argparse.SUPPRESS if suppress else False,
        help="machine-readable JSON on stdout",
    )
    group.add_argument(
        "--no-autostart",
        action="store_true",
        default=argparse.SUPPRESS if suppress else False,
        help="do not start a daemon when none answers",
    )


class _Unbuilt:
    """Takes the arguments of a subcommand that was not invoked, and builds nothing.

    Building every subcommand's parser would cost about 10 ms on each shell
    command and agent prompt; only the invoked one is built.
    """

    def add_argument(self, *args: Any, **kwargs: Any) -> None:
        pass

    def add_argument_group(self, *args: Any, **kwargs: Any) -> _Unbuilt:
        return self

    def add_mutually_exclusive_group(self, *args: Any, **kwargs: Any) -> _Unbuilt:
        return self

    def set_defaults(self, **kwargs: Any) -> None:
        pass


class _Subcommands:
    """The subcommands, all of them, or only the invoked one (``only``) and its name list."""

    def __init__(self, action: Any, only: str | None) -> None:
        self.action = action
        self.only = only
        self.names: list[str] = []

    def add_parser(self, name: str, **kwargs: Any) -> Any:
        self.names.append(name)
        if self.only is not None and name != self.only:
            return _Unbuilt()
        return self.action.add_parser(name, **kwargs)


def _invoked(argv: list[str]) -> str | None:
    """The subcommand named in ``argv`` (the first word that is not a global option)."""
    words = iter(argv)
    for word in words:
        if word in ("--socket", "--data-dir", "--policy"):
            next(words, None)
        elif not word.startswith("-"):
            return word
    return None


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The CLI's parser; with ``only``, that subcommand's arguments alone are built.

    Raises:
        KeyError: ``only`` names no subcommand.
    """
    parser = argparse.ArgumentParser(
        prog="hikmah",
        description="Durable, auditable memory for people and coding agents (client of hikmahd).",
        epilog="Run `hikmah COMMAND --help` for a command's options. Exit codes: 0 ok,"
        " 1 internal error, 2 usage, 3 refused, 4 not found, 5 daemon unavailable.",
    )
    _global_options(parser, suppress=False)
    commands = _Subcommands(
        parser.add_subparsers(dest="command", metavar="COMMAND", required=True), only
    )

    def runner(
        name: str, *, run: Callable[[argparse.Namespace], int], daemon: bool = True, **kwargs: Any
    ) -> Any:
        """A command that runs its own course (``run(args)`` gives the exit code)."""
        sub = commands.add_parser(name, **kwargs)
        if daemon:
            _global_options(sub, suppress=True)
        sub.set_defaults(run=run)
        return sub

    def command(name: str, help_text: str, handler: Handler) -> Any:
        sub = commands.add_parser(name, help=help_text, description=help_text)
        _global_options(sub, suppress=True)
        sub.set_defaults(handler=handler)
        return sub

    p = command("remember", "write a trace", _remember)
    p.add_argument("content_arg", nargs="?", metavar="CONTENT", help="what to remember")
    p.add_argument("--content", help="what to remember (or give it positionally, or on stdin)")
    p.add_argument("--kind", default="observation", choices=KINDS[:-1], help="default observation")
    p.add_argument("--tag", action="append", default=[], metavar="T", help="a tag (repeatable)")
    p.add_argument("--salience", type=float, metavar="F", help="0..1, default 0.5")
    p.add_argument("--confidence", type=float, metavar="F", help="0..1, default 0.5")
    p.add_argument("--source", metavar="S", help="kind:name, e.g. human:ana, doc:runbook")
    p.add_argument("--locator", metavar="L", help="where in the source (file:line, URL)")
    p.add_argument("--authority", type=float, metavar="F", help="0..1, default 0.5")
    p.add_argument("--verified", action="store_true", help="a person checked it (never agents)")
    p.add_argument("--claim-key", metavar="K", help="structured claim key (with --claim-value)")
    p.add_argument("--claim-value", metavar="V", help="structured claim value")
    p.add_argument("--supersedes", metavar="ID", help="the trace this one corrects")
    p.add_argument(
        "--deadline", metavar="D", help="epoch ms, YYYY-MM-DD[THH:MM[:SS]] UTC, +Nh, +Nd"
    )
    p.add_argument("--privacy", choices=["public", "private", "sensitive"], help="default private")
    p.add_argument("--scope", metavar="S", help="global (default), project:PATH, person:NAME")
    p.add_argument("--fulfills", metavar="ID", help="(an outcome) the commitment it reports done")

    p = command("recall", "recall the traces that resonate with a query", _recall)
    p.add_argument("query_arg", nargs="?", metavar="QUERY", help="words to recall by")
    p.add_argument("--query", help="words to recall by (or give them positionally)")
    p.add_argument("--tag", action="append", default=[], metavar="T", help="a tag cue (repeatable)")
    p.add_argument("--kind", action="append", default=[], choices=KINDS, help="only these kinds")
    p.add_argument("--limit", type=int, metavar="N", help="most results (capped by the policy)")
    p.add_argument("--scope", metavar="S", help="this scope and global only")
    p.add_argument("--include-superseded", action="store_true", help="history too")
    p.add_argument("--include-sensitive", action="store_true", help="sensitive traces too")
    p.add_argument("--focus", metavar="NAME", help="absorb the results into this focus capsule")

    p = command("show", "one trace with its history", _show)
    p.add_argument("id", metavar="ID")

    command("conflicts", "open conflicts: one claim key, several values", _conflicts)

    p = command("commitments", "the promise queue, soonest first", _commitments)
    p.add_argument("--within-hours", type=float, metavar="H", help="due within H hours")
    p.add_argument("--overdue", action="store_true", help="only overdue ones")

    p = command("fulfill", "mark a commitment done", _fulfill)
    p.add_argument("id_arg", nargs="?", metavar="ID")
    p.add_argument("--id", help="the commitment (or give it positionally)")

    p = command("predict", "record a forecast, to be resolved by an outcome", _predict)
    p.add_argument("--family", required=True, metavar="F", help="what it forecasts, e.g. ci.green")
    p.add_argument("--question", required=True, metavar="Q", help="the forecast, in words")
    p.add_argument(
        "--type",
        required=True,
        choices=["noul", "choice", "score"],
        help="noul: will it happen (outcome yes/no); choice: which of --answer-space;"
        " score: a number in 0..1",
    )
    p.add_argument("--p", required=True, type=float, metavar="P", help="probability, 0..1")
    p.add_argument("--value", metavar="V", help="(choice) the answer forecast")
    p.add_argument("--answer-space", metavar="A,B", help="(choice) the possible answers")
    p.add_argument("--source", metavar="S", help="who forecasts, e.g. human:ana, agent:claude")
    p.add_argument("--scope", metavar="S", help="global (default), project:PATH, person:NAME")
    p.add_argument("--deadline", metavar="D", help="when the outcome should be known")

    p = command("outcome", "resolve a prediction, once, with what was observed", _outcome)
    p.add_argument("--prediction", required=True, metavar="ID", help="the prediction")
    p.add_argument("--observed", required=True, metavar="V", help="yes/no, an answer, a score")
    p.add_argument("--source", metavar="S", help="who observed it (never a model: source)")
    p.add_argument("--note", metavar="N", help="what happened, in words")

    p = command("calibration", "how well forecasts matched outcomes, per family", _calibration)
    which = p.add_mutually_exclusive_group()
    which.add_argument("--family", metavar="F", help="only this family")
    which.add_argument("--family-prefix", metavar="P", help="families starting with P, pooled too")

    command("consolidate", "proposals of durable beliefs (never writes)", _consolidate)

    p = command("promote", "write the belief a current proposal describes", _promote)
    p.add_argument("id", metavar="PROPOSAL", help="a proposal id from consolidate (pr_…)")
    p.add_argument("--verified", action="store_true", help="you checked it (never agents)")
    p.add_argument("--source", metavar="S", help="who promotes it, e.g. human:ana")

    p = command("feedback", "a recalled trace you acted on led to a good or bad outcome", _feedback)
    p.add_argument("outcome", choices=["good", "bad"])
    p.add_argument("ids", nargs="+", metavar="ID", help="the traces acted on")

    for verb, help_text in (
        ("pin", "keep a trace at full weight in recall (no decay, no bad feedback)"),
        ("unpin", "let a pinned trace age again"),
    ):
        p = command(verb, help_text, _pin)
        p.add_argument("id", metavar="ID")

    p = command(
        "invalidate",
        "supersede every active trace matching a pattern (shows the list first)",
        _invalidate,
    )
    p.add_argument("pattern", metavar="PATTERN", help="text the traces contain (any case)")
    p.add_argument("--tag", action="append", default=[], metavar="T", help="and carry this tag")
    p.add_argument("--reason", required=True, help="why they no longer hold (kept in each)")
    p.add_argument("--stale", action="store_true", help="keep them recallable, marked stale")
    p.add_argument("--dry-run", action="store_true", help="only show what would be superseded")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")

    p = command("purge", "retention deletion of a trace (a person only)", _purge)
    p.add_argument("--id", required=True)
    p.add_argument("--reason", required=True, help="kept in the tombstone")

    command(
        "compact",
        "rewrite the ledger without the text of purged traces (a person only)",
        _compact,
    )

    p = command(
        "vault",
        "the encrypted vault: which keys it uses, or rotate its master key (a person only)",
        _vault,
    )
    p.add_argument(
        "action",
        choices=["status", "rotate"],
        help="status: key ids and keyring backend; rotate: re-wrap every data key under a new"
        " master key (payloads are not rewritten; the old master is then deleted)",
    )

    p = command("verify-ledger", "check the hash chain and the head", _verify)
    choice = p.add_mutually_exclusive_group()
    choice.add_argument("--expect-head", metavar="SEQ:HASH", help="a head pinned elsewhere")
    choice.add_argument("--accept-tail", action="store_true", help="acknowledge appended records")
    choice.add_argument(
        "--reset-head", action="store_true", help="rewrite the head from the ledger"
    )

    p = command("policy", "the policy in force, as TOML", _policy)
    p.add_argument("--print-defaults", action="store_true", help="every field with its default")

    command("status", "the daemon, the store, the policy, the reminders", _status)

    p = runner(
        "setup",
        help="wire Hikmah into Claude Code or Codex (MCP server and hooks)",
        description="Add the hikmah-agent MCP server and the session-start and prompt hooks"
        " to the agent's user configuration (~/.claude.json and ~/.claude/settings.json, or"
        " ~/.codex/config.toml and ~/.codex/hooks.json). Safe to rerun; everything else in"
        " those files is kept, and each changed file is backed up beside itself first.",
        run=_setup,
        daemon=False,
    )
    p.add_argument("host", choices=["claude", "codex"], help="the coding agent")
    p.add_argument("--remove", action="store_true", help="take exactly our entries out again")
    p.add_argument("--no-mcp", action="store_true", help="hooks only, no MCP server")

    p = runner(
        "writeback",
        help="write verified rules into a managed block of CLAUDE.md/AGENTS.md",
        description="Render the verified preferences, constraints and procedures of a scope"
        " (and the global ones) into the block between <!-- hikmah:begin --> and"
        " <!-- hikmah:end --> of an instruction file. The rest of the file is never touched;"
        " rerunning changes nothing unless memory changed; a block edited by hand is kept"
        " unless --force.",
        run=_writeback,
    )
    p.add_argument("--to", required=True, metavar="FILE", help="e.g. CLAUDE.md or AGENTS.md")
    p.add_argument(
        "--scope", metavar="S", help="default: the project of FILE (its git root or directory)"
    )
    p.add_argument("--force", action="store_true", help="overwrite a block edited by hand")

    p = runner(
        "ingest",
        help="read Claude Code / Codex session transcripts into memory",
        description="Read session transcripts (JSON Lines from ~/.claude/projects/… or"
        " ~/.codex/sessions/…; the format is detected) into episode traces (your words) and"
        " observation traces (the agent's), with the transcript as locator. Rerunning is"
        " safe: messages already ingested are skipped. Rules you stated become proposals in"
        " `hikmah consolidate`; nothing is promoted on its own.",
        run=_ingest,
    )
    p.add_argument("files", nargs="+", metavar="FILE")

    p = runner(
        "export",
        help="write memory as JSON Lines of traces (stdout, or --output FILE)",
        description="Write every trace, in write order, as one JSON object per line: the"
        " trace as `hikmah show --json` gives it, plus its status. Purged traces are never"
        " exported; superseded ones only with --include-superseded (without it, a"
        " correction's link to the trace it superseded is left out). The text is plaintext;"
        " no key ever leaves the daemon. Progress goes to stderr when it is a terminal.",
        run=_export,
    )
    p.add_argument(
        "--include-superseded", action="store_true", help="the history of corrections too"
    )
    p.add_argument(
        "--output", metavar="FILE", help="write FILE (mode 0600, atomically) instead of stdout"
    )

    p = runner(
        "import",
        help="read JSON Lines of traces, or a reference memory.jsonl ledger, into memory",
        description="Import FILE. JSON Lines of traces (as export writes them; missing fields"
        ' take the write defaults, so {"kind": "observation", "content": "..."} is a'
        " line) are validated like any write and keep their ids: importing twice writes"
        " nothing new. A ledger of the reference implementation (memory.jsonl, records v1"
        " and v2) is recognised by its records; its hash chain is checked first, and a"
        " broken chain is refused as a whole. Refused lines are reported with their line"
        " number and reason while the rest is imported. Exit 0 when everything was"
        " imported, 3 when some lines were refused or the chain is broken, 2 when FILE"
        " cannot be read.",
        run=_import,
    )
    p.add_argument("file", metavar="FILE")
    p.add_argument(
        "--force-broken-chain",
        action="store_true",
        help="(ledger) import the records before the first one that does not verify",
    )
    p.add_argument(
        "--expect-head",
        metavar="SEQ:HASH",
        help="(ledger) the head you pinned: records past it, or a rewrite, break the chain",
    )

    p = runner(
        "backup",
        help="a consistent copy of the store into an empty directory, while the daemon serves",
        description="Copy the LMDB store (compacted) and its ledger head, as of one moment,"
        " into DIR (new or empty; made 0700), with a manifest. The daemon keeps serving"
        " meanwhile. Restore with `hikmahd --restore DIR` while no daemon runs.",
        run=_backup,
    )
    p.add_argument("dir", metavar="DIR")

    p = runner(
        "eval",
        help="retrieval evaluation: recall vs a BM25 baseline on a cases file",
        description="Build a throwaway store from the traces of CASES.toml (never your memory),"
        " run each case's query, and report pass/fail per case, recall@k, MRR and nDCG for"
        " Hikmah and for SQLite FTS5 bm25() side by side. Exit 1 when a case fails."
        " See docs/evaluation.md for the file format.",
        run=_eval,
    )
    p.add_argument("cases", metavar="CASES.toml")
    p.add_argument("--k", type=int, default=5, help="results judged per query (default 5)")

    p = runner(
        "hook",
        help="context for a coding agent's hook (reads the hook JSON on stdin)",
        description="Print the host's hook JSON with memory for this session start or prompt."
        " Never fails the agent's turn: without a daemon or on any error it prints nothing"
        " and exits 0. Installed by `hikmah setup claude|codex`.",
        run=_hook,
    )
    p.add_argument("event", choices=["session-start", "prompt"], help="the hook event")
    p.add_argument("--budget", type=int, metavar="TOKENS", help="most tokens of context")

    p = runner(
        "browse",
        help="a full-screen terminal inspector of memory (needs: pip install 'hikmah[browse]')",
        description="Search, read, audit and correct memory in the terminal (Textual).",
        run=_browse,
    )
    p.add_argument("query", nargs="?", metavar="QUERY", help="start with this search")

    p = command("focus", "working memory: named, bounded focus capsules", _focus)
    p.add_argument(
        "action",
        choices=["open", "show", "pin", "unpin", "close", "list", "note"],
        help="what to do",
    )
    p.add_argument("name", nargs="?", metavar="NAME", help="the capsule (e.g. task:fix-login)")
    p.add_argument("item", nargs="?", metavar="ID|TEXT", help="a trace id (pin, unpin) or a note")
    p.add_argument("--importance", type=float, default=0.5, help="a note's importance, 0..1")
    if only is not None and only not in commands.names:
        raise KeyError(only)
    return parser


def _pick(positional: str | None, flag: str | None, name: str) -> str | None:
    if positional is not None and flag is not None:
        raise UsageError(f"give {name} once, positionally or with --{name}")
    return positional if positional is not None else flag


class UsageError(Exception):
    pass


def _remember(args: argparse.Namespace) -> tuple[str, dict[str, Any], Callable[[Any], str]]:
    content = _pick(args.content_arg, args.content, "content")
    if content is None and not sys.stdin.isatty():
        content = sys.stdin.read()
    if content is None:
        raise UsageError("say what to remember: hikmah remember 'TEXT' (or --content, or stdin)")
    params: dict[str, Any] = {"content": content, "kind": args.kind, "tags": args.tag}
    for name in REMEMBER_OPTIONS:
        if getattr(args, name) is not None:
            params[name] = getattr(args, name)
    if args.verified:
        params["verified"] = True
    return "memory.remember", params, render.remembered


def _recall(args: argparse.Namespace) -> tuple[str, dict[str, Any], Callable[[Any], str]]:
    query = _pick(args.query_arg, args.query, "query") or ""
    params: dict[str, Any] = {"query": query, "tags": args.tag, "kinds": args.kind}
    if args.limit is not None:
        params["limit"] = args.limit
    if args.scope is not None:
        params["scope"] = args.scope
    if args.include_superseded:
        params["include_superseded"] = True
    if args.include_sensitive:
        params["include_sensitive"] = True
    if args.focus is not None:
        params["focus"] = args.focus
    return "memory.recall", params, render.recalled


def _show(args: argparse.Namespace) -> tuple[str, dict[str, Any], Callable[[Any], str]]:
    return "memory.show", {"id": args.id}, render.shown


def _conflicts(args: argparse.Namespace) -> tuple[str, dict[str, Any], Callable[[Any], str]]:
    return "memory.conflicts", {}, render.conflicts


def _commitments(args: argparse.Namespace) -> tuple[str, dict[str, Any], Callable[[Any], str]]:
    params: dict[str, Any] = {"overdue": args.overdue}
    if args.within_hours is not None:
        params["within_hours"] = args.within_hours
    return "promises.list", params, render.commitments


def _fulfill(args: argparse.Namespace) -> tuple[str, dict[str, Any], Callable[[Any], str]]:
    trace_id = _pick(args.id_arg, args.id, "id")
    if trace_id is None:
        raise UsageError("say which commitment: hikmah fulfill --id ID")
    return "memory.fulfill", {"id": trace_id}, lambda r: f"fulfilled {r['id']}"


def _predict(args: argparse.Namespace) -> tuple[str, dict[str, Any], Callable[[Any], str]]:
    params: dict[str, Any] = {
        "family": args.family, "question": args.question, "type": args.type, "p": args.p,
    }  # fmt: skip
    if args.answer_space:
        params["answer_space"] = [a.strip() for a in args.answer_space.split(",")]
    for name in ("value", "source", "scope", "deadline"):
        if getattr(args, name) is not None:
            params[name] = getattr(args, name)
    return "memory.predict", params, render.remembered


def _outcome(args: argparse.Namespace) -> tuple[str, dict[str, Any], Callable[[Any], str]]:
    params = {"prediction": args.prediction, "observed": args.observed}
    for name in ("source", "note"):
        if getattr(args, name) is not None:
            params[name] = getattr(args, name)
    return "memory.outcome", params, lambda r: f"resolved {r['resolved']} with {r['trace']['id']}"


def _calibration(args: argparse.Namespace) -> tuple[str, dict[str, Any], Callable[[Any], str]]:
    params = {"family": args.family, "family_prefix": args.family_prefix}
    return "memory.calibration", params, render.calibration


def _consolidate(args: argparse.Namespace) -> tuple[str, dict[str, Any], Callable[[Any], str]]:
    return "replay.consolidate", {}, render.proposals


def _promote(args: argparse.Namespace) -> tuple[str, dict[str, Any], Callable[[Any], str]]:
    params: dict[str, Any] = {"id": args.id, "verified": args.verified}
    if args.source is not None:
        params["source"] = args.source
    return "replay.promote", params, render.remembered


def _feedback(args: argparse.Namespace) -> tuple[str, dict[str, Any], Callable[[Any], str]]:
    params = {"ids": args.ids, "outcome": args.outcome}
    return "memory.feedback", params, lambda r: f"{r['outcome']} outcome for {', '.join(r['ids'])}"


def _pin(args: argparse.Namespace) -> tuple[str, dict[str, Any], Callable[[Any], str]]:
    def show(result: dict[str, Any]) -> str:
        return f"{'pinned' if result['pinned'] else 'unpinned'} {result['id']}"

    return f"memory.{args.command}", {"id": args.id}, show


def _invalidate(args: argparse.Namespace) -> tuple[str, dict[str, Any], Callable[[Any], str]]:
    params = {
        "pattern": args.pattern, "tags": args.tag, "reason": args.reason, "stale": args.stale,
    }  # fmt: skip
    if args.dry_run:
        return "memory.invalidate", {**params, "dry_run": True}, render.invalidated
    preview = call(args, "memory.invalidate", {**params, "dry_run": True})
    if not preview["matched"]:
        return "memory.invalidate", {**params, "dry_run": True}, render.invalidated
    print(render.invalidated(preview), file=sys.stderr)
    if not args.yes:
        if not sys.stdin.isatty():
            raise UsageError("not a terminal: check the list above, then rerun with --yes")
        answer = input(f"Supersede these {len(preview['matched'])} traces? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            raise Exit(OK)
    return "memory.invalidate", params, render.invalidated


def _purge(args: argparse.Namespace) -> tuple[str, dict[str, Any], Callable[[Any], str]]:
    return (
        "memory.purge",
        {"id": args.id, "reason": args.reason},
        lambda r: f"purged {r['id']}\n  {r['note']}",
    )


def _compact(args: argparse.Namespace) -> tuple[str, dict[str, Any], Callable[[Any], str]]:
    return "ledger.compact", {}, render.compacted


def _vault(args: argparse.Namespace) -> tuple[str, dict[str, Any], Callable[[Any], str]]:
    if args.action == "rotate":
        return "vault.rotate", {}, render.rotated
    return "vault.status", {}, render.vault_status


def _verify(args: argparse.Namespace) -> tuple[str, dict[str, Any], Callable[[Any], str]]:
    params: dict[str, Any] = {}
    if args.expect_head:
        params["expect_head"] = args.expect_head
    if args.accept_tail:
        params["accept_tail"] = True
    if args.reset_head:
        params["reset_head"] = True
    return "ledger.verify", params, render.verified


def _policy(args: argparse.Namespace) -> tuple[str, dict[str, Any], Callable[[Any], str]]:
    def show(result: dict[str, Any]) -> str:
        note = f"# in force, from {result['path']}\n"
        if result.get("error"):
            note += f"# NOT APPLIED (previous policy stays): {result['error']}\n"
        return note + str(result["toml"]).rstrip()

    return "policy.get", {"defaults": args.print_defaults}, show


def _status(args: argparse.Namespace) -> tuple[str, dict[str, Any], Callable[[Any], str]]:
    return "daemon.status", {}, render.status


def _focus(args: argparse.Namespace) -> tuple[str, dict[str, Any], Callable[[Any], str]]:
    if args.action == "list":
        return "focus.list", {}, render.capsules
    if args.name is None:
        raise UsageError(f"say which capsule: hikmah focus {args.action} NAME")
    name = {"name": args.name}
    if args.action in ("pin", "unpin"):
        if args.item is None:
            raise UsageError(f"say which trace: hikmah focus {args.action} NAME ID")
        return f"focus.{args.action}", {**name, "id": args.item}, render.capsule
    if args.action == "note":
        if args.item is None:
            raise UsageError("say the note: hikmah focus note NAME 'TEXT'")
        params = {**name, "text": args.item, "importance": args.importance}
        return "focus.note", params, render.noted
    method = {"open": "focus.open", "show": "focus.read", "close": "focus.close"}[args.action]
    shown = render.closed if args.action == "close" else render.capsule
    return method, name, shown


def _executable(name: str) -> str:
    """The installed ``name`` script: beside this Python (a virtualenv), else on PATH."""
    import shutil  # noqa: PLC0415 -- only setup needs it

    beside = Path(sys.executable).with_name(name)
    found = str(beside) if beside.exists() else shutil.which(name)
    if found is None:
        raise UsageError(f"cannot find the {name} command; install hikmah with `pip install .`")
    return str(Path(found).absolute())


def _setup(args: argparse.Namespace) -> int:
    from . import setup  # noqa: PLC0415 -- a rare command; keep the hot path lean

    hikmah = _executable("hikmah")
    agent = hikmah if args.no_mcp or args.remove else _executable("hikmah-agent")
    try:
        lines = setup.setup(
            args.host, home=Path.home(), remove=args.remove, mcp=not args.no_mcp,
            hikmah=hikmah, hikmah_agent=agent,
        )  # fmt: skip
    except (setup.SetupError, OSError) as exc:
        print(f"hikmah setup: {exc}", file=sys.stderr)
        return INTERNAL
    print("\n".join(lines))
    if not args.remove:
        print(f"Restart {'Claude Code' if args.host == 'claude' else 'Codex'} to load them.")
    return OK


def _writeback(args: argparse.Namespace) -> int:
    from . import writeback  # noqa: PLC0415 -- a rare command; keep the hot path lean

    target = Path(args.to)
    scope = args.scope or paths.project_scope(target.absolute().parent)
    params = {"scope": scope, "verified_only": True, "within_hours": 0, "limit": 500}
    traces = [entry["trace"] for entry in call(args, "memory.context", params)["standing"]]
    label = "global" if scope == "global" else f"{scope} and global"
    try:
        done = writeback.writeback(target, traces, scope_label=label, force=args.force)
    except writeback.HandEdited as exc:
        print(f"hikmah writeback: {exc}", file=sys.stderr)
        return REFUSED
    except (writeback.MalformedBlock, OSError, UnicodeDecodeError) as exc:
        print(f"hikmah writeback: {exc}", file=sys.stderr)
        return INTERNAL
    if args.json:
        print(json.dumps({"path": str(target), "result": done, "traces": len(traces)}))
    else:
        print(f"{done} {target}: {len(traces)} verified trace(s) of {label}")
    return OK


def _ingest(args: argparse.Namespace) -> int:
    reports, failed = [], 0
    for number, name in enumerate(args.files, 1):
        try:
            report = call(args, "replay.ingest", {"path": os.path.abspath(name)})
        except Exit as exc:
            if exc.code == UNAVAILABLE:
                return UNAVAILABLE
            failed += 1  # the reason is on stderr; go on with the next file
            continue
        reports.append(report)
        if not args.json:
            print(f"[{number}/{len(args.files)}] {render.ingested(report)}", flush=True)
    if args.json:
        print(json.dumps({"files": reports}, ensure_ascii=False))
    elif reports:
        print("rules you stated are proposed by: hikmah consolidate")
    return USAGE if failed else OK


# Import batches stay well under the daemon's 1 MiB frame limit.
BATCH_LINES = 500
BATCH_BYTES = 512 * 1024
MAX_LINE_BYTES = 900 * 1024
LEDGER_KEYS = frozenset({"seq", "prev_hash", "payload", "hash"})


def _export(args: argparse.Namespace) -> int:
    with _Session(args) as session:
        counts = session.call("daemon.status", {})["counts"]
        total = counts["active"] + counts["fulfilled"]
        total += counts["superseded"] if args.include_superseded else 0
        progress = render.Progress("exported", total, "traces")
        params = {"include_superseded": args.include_superseded, "limit": 500}
        after, count, chunks = None, 0, []
        while True:
            page = session.call("memory.export", {**params, "after": after})
            text = "".join(json.dumps(t, ensure_ascii=False) + "\n" for t in page["traces"])
            if args.output:
                chunks.append(text)
            else:
                try:
                    sys.stdout.write(text)
                except BrokenPipeError:  # `hikmah export | head`: the reader has enough
                    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
                    return OK
            count += len(page["traces"])
            progress.update(count)
            after = page["next"]
            if after is None:
                break
    progress.end()
    if args.output:
        from .files import write_atomic  # noqa: PLC0415 -- only export --output writes files

        try:
            write_atomic(Path(args.output), "".join(chunks).encode(), 0o600)
        except OSError as exc:
            print(f"hikmah export: cannot write {args.output}: {exc.strerror}", file=sys.stderr)
            return INTERNAL
        if args.json:
            print(json.dumps({"path": os.path.abspath(args.output), "traces": count}))
        else:
            print(f"exported {count} traces to {args.output}")
    return OK


def _import(args: argparse.Namespace) -> int:
    try:
        data = Path(args.file).read_bytes()
    except OSError as exc:
        print(f"hikmah import: cannot read {args.file}: {exc.strerror or exc}", file=sys.stderr)
        return USAGE
    rows = [
        (number, raw.rstrip(b"\r"))
        for number, raw in enumerate(data.split(b"\n"), 1)
        if raw.strip()
    ]
    first, _ = _json_line(rows[0][1]) if rows else (None, None)
    ledger = isinstance(first, dict) and first.keys() >= LEDGER_KEYS
    if not ledger and (args.force_broken_chain or args.expect_head):
        print(
            "hikmah import: --force-broken-chain and --expect-head are for reference ledgers;"
            f" {args.file} holds traces",
            file=sys.stderr,
        )
        return USAGE
    report = _import_ledger(args, rows) if ledger else _import_traces(args, rows)
    report = {"file": os.path.abspath(args.file), **report}
    if args.json:
        print(json.dumps(report, ensure_ascii=False))
    else:
        for refused in report["refused"]:
            print(f"hikmah import: {render.refused_line(refused)}", file=sys.stderr)
        print(render.imported(report))
    return REFUSED if report["refused"] or report.get("break") else OK


def _import_traces(args: argparse.Namespace, rows: list[tuple[int, bytes]]) -> dict[str, Any]:
    """JSON Lines of traces: each line checked locally for JSON, then written by the daemon."""
    items: list[dict[str, Any]] = []
    refused: list[dict[str, Any]] = []
    settle: list[dict[str, Any]] = []
    for number, raw in rows:
        value, problem = _json_line(raw)
        if problem is None and not isinstance(value, dict):
            problem = f"not a trace object but a JSON {_json_type(value)}"
        item = {"line": number, "trace": value}
        if problem is None and len(json.dumps(item, ensure_ascii=False).encode()) > MAX_LINE_BYTES:
            problem = f"too large to import (over {MAX_LINE_BYTES >> 10} KiB)"
        if problem is not None:
            refused.append({"line": number, "reason": problem})
            continue
        items.append(item)
        status, trace_id = value.get("status"), value.get("id")
        if status in ("fulfilled", "superseded") and isinstance(trace_id, str):
            settle.append({"line": number, "id": trace_id, "status": status})
    report: dict[str, Any] = {"format": "traces", "lines": len(rows), "written": 0, "already": 0}
    notes: list[dict[str, Any]] = []
    settled = 0
    progress = render.Progress("imported", len(rows), "lines")
    done = len(refused)
    with _Session(args) as session:
        for batch in _batches(items):
            result = session.call("memory.import", {"lines": batch})
            report["written"] += result["written"]
            report["already"] += result["already"]
            refused += result["refused"]
            notes += result["notes"]
            done += len(batch)
            progress.update(done)
        # Statuses that only the whole file makes: fulfil what no imported outcome did.
        gone = {r["line"] for r in refused}
        pending = [s for s in settle if s["line"] not in gone]
        for start in range(0, len(pending), BATCH_LINES):
            result = session.call("memory.import", {"settle": pending[start : start + BATCH_LINES]})
            settled += result["settled"]
            notes += result["notes"]
    progress.end()
    refused.sort(key=lambda r: r["line"])
    notes.sort(key=lambda n: n["line"])
    return {**report, "settled": settled, "refused": refused, "notes": notes}


def _import_ledger(args: argparse.Namespace, rows: list[tuple[int, bytes]]) -> dict[str, Any]:
    """A reference ledger: the whole chain is verified first, then its records are mapped."""
    records: list[dict[str, Any]] = []
    broken: dict[str, Any] | None = None
    for number, raw in rows:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            broken = {"line": number, "seq": None, "reason": "the record is not UTF-8 text"}
            break
        if len(raw) > MAX_LINE_BYTES // 2:  # escaped as a JSON string, it may double
            broken = {"line": number, "seq": None, "reason": "the record is too large to check"}
            break
        records.append({"line": number, "text": text})
    pinned = None if args.expect_head is None else _pinned_seq(args.expect_head)
    with _Session(args) as session:
        progress = render.Progress("verified", len(rows), "records")
        after, checked = None, 0
        for batch in _batches(records):
            params = {"records": batch, "after": after, "expect_head": args.expect_head}
            result = session.call("memory.import_ledger", {**params, "check_only": True})
            checked += result["checked"]
            after = result["tail"] or after
            progress.update(checked)
            if result["break"] is not None:
                broken = result["break"]
                break
        progress.end()
        ends = 0 if after is None else after["seq"]
        if broken is None and pinned is not None and ends < pinned:
            broken = {
                "line": None,
                "seq": None,
                "reason": f"the ledger ends at seq {ends}, before the pinned head (seq {pinned}):"
                " records were removed",
            }
        report: dict[str, Any] = {
            "format": "reference-ledger",
            "records": len(rows),
            "verified": checked,
            "head": after,
            "break": broken,
            "imported": False,
            "written": 0,
            "already": 0,
            "linked": 0,
            "refused": [],
            "notes": [],
        }
        if broken is not None and not args.force_broken_chain:
            print(
                f"hikmah import: {render.chain_break(broken)}; nothing was imported. Rerun with"
                f" --force-broken-chain to import the {checked} records before the break.",
                file=sys.stderr,
            )
            return report
        report["imported"] = True
        progress = render.Progress("imported", checked, "records")
        after, done = None, 0
        for batch in _batches(records[:checked]):
            result = session.call("memory.import_ledger", {"records": batch, "after": after})
            after = result["tail"]
            for key in ("written", "already", "linked", "refused", "notes"):
                report[key] += result[key]
            done += len(batch)
            progress.update(done)
        progress.end()
    return report


def _backup(args: argparse.Namespace) -> int:
    target = os.path.abspath(args.dir)
    # A large store takes a while to copy: no reply timeout.
    with _Session(args, timeout=None) as session:
        result = session.call("daemon.backup", {"dir": target})
    print(json.dumps(result) if args.json else render.backed_up(result))
    return OK


def _batches(items: list[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    """Consecutive runs of at most BATCH_LINES items and about BATCH_BYTES of JSON."""
    batch: list[dict[str, Any]] = []
    size = 0
    for item in items:
        length = len(json.dumps(item, ensure_ascii=False).encode()) + 1
        if batch and (len(batch) >= BATCH_LINES or size + length > BATCH_BYTES):
            yield batch
            batch, size = [], 0
        batch.append(item)
        size += length
    if batch:
        yield batch


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _json_line(raw: bytes) -> tuple[Any, str | None]:
    """The JSON value of one line, or why it has none (never echoing the line)."""
    try:
        return json.loads(raw.decode("utf-8"), parse_constant=_reject_constant), None
    except UnicodeDecodeError:
        return None, "not UTF-8 text"
    except json.JSONDecodeError as exc:
        return None, f"not JSON ({exc.msg} at column {exc.colno})"
    except (ValueError, RecursionError) as exc:
        return None, f"not JSON ({exc})" if isinstance(exc, ValueError) else "nested too deeply"


def _json_type(value: Any) -> str:
    names = {list: "array", str: "string", bool: "boolean", int: "number", float: "number"}
    return "null" if value is None else names.get(type(value), "value")


def _pinned_seq(text: str) -> int:
    seq, sep, digest = text.partition(":")
    if not sep or not seq.isdigit() or len(digest) != 64:
        raise Exit(_usage("import", "--expect-head must be SEQ:HASH, as verify-ledger prints it"))
    return int(seq)


def _usage(command: str, message: str) -> int:
    print(f"hikmah {command}: {message}", file=sys.stderr)
    return USAGE


def _eval(args: argparse.Namespace) -> int:
    """Run the harness in a process of its own: the CLI never loads the store itself."""
    argv = [sys.executable, "-m", "hikmah.evaluation", args.cases, "--k", str(args.k)]
    if args.json:
        argv.append("--json")
    if args.policy:
        argv += ["--policy", args.policy]
    os.execv(sys.executable, argv)


def _browse(args: argparse.Namespace) -> int:
    from hikmah_browse import launch  # noqa: PLC0415 -- only browse loads the browser

    return launch.run(args)


def _hook(args: argparse.Namespace) -> int:
    from . import hooks  # noqa: PLC0415 -- only hooks pay for the tokenizer

    output = hooks.run(args.event, sys.stdin.read(), paths.socket_path(args.socket), args.budget)
    if output:
        print(output)
    return OK


class Exit(Exception):
    """Stop with this exit code; the reason was printed on stderr already."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def call(args: argparse.Namespace, method: str, params: dict[str, Any]) -> Any:
    """One request to the daemon (started if needed); a failure is printed and raised as Exit."""
    with _Session(args) as session:
        return session.call(method, params)


class _Session:
    """A connection to the daemon (started if needed) for one or many requests.

    A failure is printed on stderr and raised as :class:`Exit` with its exit code.
    """

    def __init__(self, args: argparse.Namespace, timeout: float | None = 60.0) -> None:
        self.args = args
        try:
            self.client = connect(
                paths.socket_path(args.socket),
                autostart=not args.no_autostart,
                daemon_args=environment_flags(args.data_dir, args.policy),
            )
        except Unavailable as exc:
            print(f"hikmah: {exc}", file=sys.stderr)
            raise Exit(UNAVAILABLE) from None
        self.client.sock.settimeout(timeout)

    def __enter__(self) -> _Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.client.close()

    def call(self, method: str, params: dict[str, Any]) -> Any:
        try:
            return self.client.call(method, params)
        except Unavailable as exc:
            print(f"hikmah: {exc}", file=sys.stderr)
            raise Exit(UNAVAILABLE) from None
        except RemoteError as exc:
            print(f"hikmah {self.args.command}: {exc}", file=sys.stderr)
            if exc.reason in EXIT_FOR_REASON:
                raise Exit(EXIT_FOR_REASON[exc.reason]) from None
            raise Exit(USAGE if exc.code in (-32600, -32602) else INTERNAL) from None


def main(argv: list[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else argv
    try:
        parser = build_parser(only=_invoked(words))
    except KeyError:
        parser = build_parser()  # not a command: the full parser says so, with the list
    args = parser.parse_args(words)
    try:
        if "run" in args:
            code: int = args.run(args)
            return code
        method, params, show = args.handler(args)
        result = call(args, method, params)
    except UsageError as exc:
        parser.exit(USAGE, f"hikmah {args.command}: {exc}\n")
    except Exit as exc:
        return exc.code
    if args.json:
        print(json.dumps(result, ensure_ascii=False))
    else:
        print(show(result))
    if method == "ledger.verify" and not result["ok"]:
        return INTERNAL
    return OK


if __name__ == "__main__":
    sys.exit(main())
