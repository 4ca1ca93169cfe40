"""``hikmah browse``: start the browser, or say how to install it.

Standard library only until the browser itself starts: the CLI imports this
module only when ``browse`` is the command, and every other command starts as
it did without it. ``python -m hikmah_browse`` starts it here too (:func:`main`),
with the flags and exit codes of ``hikmah browse``.
"""

from __future__ import annotations

import argparse
import sys

from hikmah.model import paths
from hikmah_client.connection import Unavailable, connect, environment_flags
from hikmah_client.options import global_options

INSTALL = (
    "hikmah browse needs the browse extra (Textual), which is not installed;"
    " install it with: pip install 'hikmah[browse]'"
)
MISSING, UNAVAILABLE = 1, 5  # the CLI's exit codes for an internal error and no daemon


def main(argv: list[str] | None = None) -> int:
    """``python -m hikmah_browse [QUERY]``: ``hikmah browse``, parsed as the CLI parses it."""
    parser = argparse.ArgumentParser(
        prog="hikmah browse",
        description="Search, read, audit and correct memory in the terminal (Textual).",
    )
    global_options(parser, suppress=False)
    parser.add_argument("query", nargs="?", metavar="QUERY", help="start with this search")
    return run(parser.parse_args(argv))


def run(args: argparse.Namespace) -> int:
    """Run the browser for the CLI's parsed ``args``; the exit code."""
    try:
        import textual  # noqa: F401, PLC0415 -- the optional extra
    except ImportError:
        print(f"hikmah browse: {INSTALL}", file=sys.stderr)
        return MISSING
    if not sys.stdin.isatty() or not sys.stdout.isatty():
        print("hikmah browse: needs a terminal (stdin and stdout)", file=sys.stderr)
        return 2
    socket_path = paths.socket_path(args.socket)
    daemon_args = environment_flags(args.data_dir, args.policy)
    autostart = not args.no_autostart
    # Connect before taking the screen, so an unreachable daemon is reported plainly.
    try:
        first = connect(socket_path, autostart=autostart, daemon_args=daemon_args)
    except Unavailable as exc:
        print(f"hikmah: {exc}", file=sys.stderr)
        return UNAVAILABLE
    from .app import run as run_app  # noqa: PLC0415 -- Textual loads only here
    from .rpc import Dialer  # noqa: PLC0415

    dialer = Dialer(socket_path, autostart=autostart, daemon_args=daemon_args, first=first.sock)
    return run_app(dialer, query=args.query or "")
