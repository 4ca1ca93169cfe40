"""``hikmah-agent``: run the restricted MCP server on stdin/stdout.

An agent host (Claude Code, Codex, …) starts it as a stdio MCP server; see
``hikmah setup claude|codex|gemini|opencode``. Logs go to stderr; stdout carries only MCP.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from hikmah import __version__
from hikmah.model import paths
from hikmah_client.connection import environment_flags

from .link import Link
from .locate import agent_socket
from .protocol import Server
from .tools import INSTRUCTIONS, Tools


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="hikmah-agent",
        description="Hikmah memory for coding agents: an MCP server over stdio whose"
        " connection to hikmahd is restricted to agent privileges (no verify, purge,"
        " ledger acceptance or policy changes).",
    )
    parser.add_argument("--socket", metavar="PATH", help="daemon socket")
    parser.add_argument("--data-dir", metavar="DIR", help="data directory (for autostart)")
    parser.add_argument("--policy", metavar="FILE", help="policy file (for autostart)")
    parser.add_argument(
        "--no-autostart", action="store_true", help="do not start a daemon when none answers"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="hikmah-agent: %(message)s")
    link = Link(
        agent_socket(args.socket, os.environ),
        autostart=not args.no_autostart,
        daemon_args=environment_flags(args.data_dir, args.policy),
        data_dir=paths.data_dir(args.data_dir),
    )
    server = Server("hikmah", __version__, INSTRUCTIONS, Tools(link, Path.cwd()))
    # The daemon connection closes with the process; a call still waiting on it after
    # the drain is abandoned (its thread is a daemon thread).
    server.serve(sys.stdin.buffer, sys.stdout.buffer)


if __name__ == "__main__":
    main()
