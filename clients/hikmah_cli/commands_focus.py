"""The ``hikmah focus`` command: working memory's named, bounded capsules."""

import argparse

from . import render_memory
from .command import Command, Request, arg
from .session import UsageError


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


COMMANDS: tuple[Command, ...] = (
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
            "focus.list": render_memory.capsules,
            "focus.note": render_memory.noted,
            "focus.close": render_memory.closed,
            "focus.open": render_memory.capsule,
            "focus.read": render_memory.capsule,
            "focus.pin": render_memory.capsule_pinned,
            "focus.unpin": render_memory.capsule_pinned,
        },
    ),
)
