"""Asking the person at this terminal for a passphrase: pinentry in a desktop session,
else the terminal itself; never standard input, an argument, a file or the environment.

A passphrase proves that a person is present, so it must come from where only
the person types: the controlling terminal (``/dev/tty``, echo off), or, in a
desktop session with pinentry installed (the program gpg-agent uses;
Debian's ``pinentry-gnome3``, ``pinentry-curses``, ``pinentry-tty``), a
pinentry dialog spoken to over its Assuan protocol. Standard library only (and
:mod:`hikmah.model.display`, which is too).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import termios
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import unquote

from hikmah.model.display import visible

# pinentry, in the order tried: Debian's alternative first (the flavour the person chose).
PINENTRIES = ("pinentry", "pinentry-gnome3", "pinentry-qt", "pinentry-gtk-2", "pinentry-curses",
              "pinentry-tty")  # fmt: skip
_ASSUAN_CANCELLED = "83886179"
_PINENTRY_EXIT_S = 5.0


class NoTerminal(Exception):
    """There is no controlling terminal to ask on (and no pinentry to ask with)."""


class Cancelled(Exception):
    """The person gave no passphrase (an empty line, end of input, or cancel)."""


def terminal_name() -> str | None:
    """The controlling terminal's path (``/dev/pts/3``), or None without one."""
    try:
        with _terminal() as fd:
            return os.ttyname(fd)
    except NoTerminal:
        return None


def ask(prompt: str, description: str) -> str:
    """One passphrase from the person: ``prompt`` ends in ``": "``; ``description``
    says what it is for (the action being confirmed), shown above the prompt.

    Raises:
        NoTerminal: there is no controlling terminal.
        Cancelled: the person gave none.
    """
    with _terminal() as fd:
        tty = os.ttyname(fd)
        pinentry = _pinentry_program()
        if pinentry is not None:
            return _from_pinentry(pinentry, prompt, description, tty)
        return _from_terminal(fd, prompt, description)


@contextmanager
def _terminal() -> Iterator[int]:
    try:
        fd = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY)
    except OSError:
        raise NoTerminal("no controlling terminal to ask for the passphrase on") from None
    try:
        yield fd
    finally:
        os.close(fd)


def _pinentry_program() -> str | None:
    """pinentry, when there is a desktop session to show it in and it is installed."""
    if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        return None
    return next((found for name in PINENTRIES if (found := shutil.which(name))), None)


def _from_terminal(fd: int, prompt: str, description: str) -> str:
    old = termios.tcgetattr(fd)
    quiet = list(old)
    quiet[3] &= ~termios.ECHO
    # Echo goes off before the prompt shows: what is typed after it is never echoed,
    # and never flushed away.
    termios.tcsetattr(fd, termios.TCSAFLUSH, quiet)
    os.write(fd, f"{visible(description)}\n{prompt}".encode())
    try:
        line = b""
        while not line.endswith(b"\n"):
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            line += chunk
    finally:
        termios.tcsetattr(fd, termios.TCSAFLUSH, old)
        os.write(fd, b"\n")
    passphrase = line.decode("utf-8", "replace").rstrip("\r\n")
    if not passphrase:
        raise Cancelled("no passphrase given")
    return passphrase


def _escape(text: str) -> str:
    """Text as an Assuan command argument (percent-escaped)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _from_pinentry(program: str, prompt: str, description: str, tty: str) -> str:
    """Ask with pinentry over Assuan: set the terminal, title, text and prompt, GETPIN."""
    process = subprocess.Popen(
        [program], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, text=True, encoding="utf-8",
    )  # fmt: skip
    assert process.stdin is not None and process.stdout is not None
    commands = [
        f"OPTION ttyname={tty}",
        f"OPTION ttytype={os.environ.get('TERM', 'dumb')}",
        "SETTITLE Hikmah",
        f"SETDESC {_escape(description)}",
        f"SETPROMPT {_escape(prompt.rstrip())}",
    ]
    try:
        _expect_ok(process.stdout.readline())
        for command in commands:
            process.stdin.write(command + "\n")
            process.stdin.flush()
            _expect_ok(process.stdout.readline())
        process.stdin.write("GETPIN\n")
        process.stdin.flush()
        data = ""
        while True:
            line = process.stdout.readline()
            if line.startswith("D "):
                data += unquote(line[2:].rstrip("\n"))
                continue
            if line.startswith("ERR") and _ASSUAN_CANCELLED in line:
                raise Cancelled("the passphrase dialog was cancelled")
            _expect_ok(line)
            break
        process.stdin.write("BYE\n")
        process.stdin.flush()
    except (OSError, ValueError) as exc:
        raise NoTerminal(f"{program} failed: {exc}") from None
    finally:
        process.stdin.close()
        try:
            process.wait(timeout=_PINENTRY_EXIT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    if not data:
        raise Cancelled("no passphrase given")
    return data


def _expect_ok(line: str) -> None:
    if not line.startswith("OK"):
        raise ValueError(line.strip() or "it closed the connection")
