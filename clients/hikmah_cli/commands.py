"""Every ``hikmah`` command as a row of one table: its name, flags, request and renderer.

A command that is one request says how to build it from its flags
(``request``: the method and its params) and how to show the result to a
person (``show``); ``--json`` prints the result as it came. A command that
runs its own course (several requests, files, another program) has ``run``
instead, which returns the exit code. The rows live by topic
(:mod:`hikmah_cli.command` says what a row is); this is the table in the order
``hikmah --help`` lists it. The parser is built from the table, only for the
invoked command (:mod:`hikmah_cli.__main__`).
"""

from . import (
    commands_focus,
    commands_learning,
    commands_memory,
    commands_service,
    commands_transfer,
)
from .command import Command

COMMANDS: tuple[Command, ...] = (
    *commands_memory.COMMANDS,
    *commands_learning.COMMANDS,
    *commands_service.COMMANDS,
    *commands_transfer.COMMANDS,
    *commands_focus.COMMANDS,
)
