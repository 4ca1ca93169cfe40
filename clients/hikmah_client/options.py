"""The global options of ``hikmah``: which daemon a command reaches, and how it answers.

``hikmah`` takes them before or after any command that reaches the daemon, and
``python -m hikmah_browse`` takes them as ``hikmah browse`` does.
"""

from __future__ import annotations

import argparse
from typing import Any


def global_options(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    """Add the global options to ``parser``; with ``suppress``, a subcommand's parser
    sets none it was not given (the top-level parser's defaults stand)."""
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
