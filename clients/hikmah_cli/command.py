"""A ``hikmah`` command as a row of the table (:mod:`hikmah_cli.commands`), and what the
rows share: flags several commands take, and the helpers that build a request from them."""

# No `from __future__ import annotations` here: NamedTuple compiles every annotation it
# gets as a string, which cost a millisecond on each command.
import argparse
import time
from collections.abc import Callable
from typing import Any, NamedTuple

from hikmah.model.deadlines import parse_deadline
from hikmah.model.display import visible
from hikmah.model.errors import InvalidInput
from hikmah.model.vocabulary import KINDS
from hikmah_client.text import relative, when

from .session import UsageError

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


def given(args: argparse.Namespace, *names: str) -> dict[str, Any]:
    """The params named, from the flags of the same name that were given (a switch: set)."""
    values = ((name, getattr(args, name)) for name in names)
    return {name: value for name, value in values if value is not None and value is not False}


def pick(args: argparse.Namespace, name: str) -> Any:
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


def check_deadline(args: argparse.Namespace) -> None:
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
