"""``hikmah``: remember, recall and audit memory from the shell.

Exit codes: 0 success, 1 internal error, 2 usage error, 3 refused (secret,
agent-session restriction, policy, provenance, conflict), 4 not found,
5 daemon unavailable. The commands are the table of :mod:`hikmah_cli.commands`.
"""

from __future__ import annotations

import argparse
import json
import sys

from hikmah.model.display import visible
from hikmah_client.options import global_options

from .command import OneOf
from .commands import COMMANDS
from .session import INTERNAL, OK, USAGE, Exit, Session, UsageError, call, json_error

BY_NAME = {command.name: command for command in COMMANDS}


def _invoked(argv: list[str]) -> str | None:
    """The subcommand named in ``argv`` (the first word that is not a global option)."""
    words = iter(argv)
    for word in words:
        if word in ("--socket", "--data-dir", "--policy"):
            next(words, None)
        elif not word.startswith("-"):
            return word
    return None


def _joined(argv: list[str]) -> list[str]:
    """``--as-of -3d`` as ``--as-of=-3d``: argparse takes a value that starts with a dash
    for another option."""
    out: list[str] = []
    words = iter(argv)
    for word in words:
        if word == "--as-of":
            value = next(words, None)
            out.append(word if value is None else f"{word}={value}")
        else:
            out.append(word)
    return out


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The CLI's parser; with ``only``, that subcommand's arguments alone are built
    (building every subcommand's would cost about 10 ms on each shell command and
    agent prompt).

    Raises:
        KeyError: ``only`` names no subcommand.
    """
    if only is not None and only not in BY_NAME:
        raise KeyError(only)
    parser = argparse.ArgumentParser(
        prog="hikmah",
        description="Durable, auditable memory for people and coding agents (client of hikmahd).",
        epilog="Run `hikmah COMMAND --help` for a command's options. Exit codes: 0 ok,"
        " 1 internal error, 2 usage, 3 refused, 4 not found, 5 daemon unavailable, 6 an"
        " evaluation's cases failed.",
    )
    global_options(parser, suppress=False)
    subcommands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in COMMANDS:
        if only is not None and command.name != only:
            continue
        sub = subcommands.add_parser(
            command.name, help=command.help, description=command.description or command.help
        )
        sub.set_defaults(command_parser=sub)  # its own usage for a flag it does not know
        if command.daemon:
            global_options(sub, suppress=True)
        for item in command.args:
            if isinstance(item, OneOf):
                group = sub.add_mutually_exclusive_group()
                for choice in item.args:
                    group.add_argument(*choice.names, **choice.options)
            else:
                sub.add_argument(*item.names, **item.options)
    return parser


def main(argv: list[str] | None = None) -> int:
    words = _joined(sys.argv[1:] if argv is None else argv)
    try:
        parser = build_parser(only=_invoked(words))
    except KeyError:
        parser = build_parser()  # not a command: the full parser says so, with the list
    args, unknown = parser.parse_known_args(words)
    if unknown:
        args.command_parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    command = BY_NAME[args.command]
    args.words = words  # as typed: what a proof of presence confirms
    try:
        if command.person is not None and command.person(args):
            from . import presence  # noqa: PLC0415 -- only person-only commands prove

            with Session(args) as session:
                presence.ensure(session)
        if command.run is not None:
            return command.run(args)
        assert command.request is not None
        method, params = command.request(args)
        result = call(args, method, params)
    except UsageError as exc:
        json_error(args, "usage", str(exc))
        parser.exit(USAGE, visible(f"hikmah {args.command}: {exc}") + "\n")
    except Exit as exc:
        return exc.code
    if args.json:
        print(json.dumps(result, ensure_ascii=False))
    else:
        show = command.show[method] if isinstance(command.show, dict) else command.show
        print(visible(show(result)))
    if method == "ledger.verify" and not result.ok:
        return INTERNAL
    return OK


if __name__ == "__main__":
    sys.exit(main())
