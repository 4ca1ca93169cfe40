"""A shell in a real pseudo-terminal (Python's ``pty``), as a person's terminal: it leads
its session, the pty is its controlling terminal, and the commands it runs are its
children. Tests type into it and read what it shows, answering prompts as a person."""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import time
from collections.abc import Sequence
from pathlib import Path

READ_TIMEOUT_S = 60.0


class PtyShell:
    """``bash --norc`` on a pty of its own, reading commands from it one line at a time."""

    def __init__(self, env: dict[str, str], cwd: Path) -> None:
        pid, fd = pty.fork()
        if pid == 0:  # the child: a session leader with the pty as its terminal
            os.chdir(cwd)
            os.execve("/bin/bash", ["bash", "--norc", "--noprofile"], env)
        self.pid, self.fd = pid, fd
        self.seen = ""

    def run(
        self,
        command: str,
        answers: Sequence[tuple[str, str]] = (),
        timeout: float = READ_TIMEOUT_S,
    ) -> tuple[int, str]:
        """Run one command line; each time its output shows ``prompt`` (in order), type
        ``reply`` and Enter. Returns the exit status and everything it showed."""
        marker = f"__rc_{time.monotonic_ns()}"
        os.write(self.fd, f'{command}; echo "{marker}=$?"\n'.encode())
        pending = list(answers)
        out = ""
        done = re.compile(re.escape(marker) + r"=(\d+)\r?\n")
        deadline = time.monotonic() + timeout
        while True:
            found = done.search(out)
            if found:
                return int(found.group(1)), out[: found.start()]
            if pending and pending[0][0] in out:
                prompt, reply = pending.pop(0)
                out = out.replace(prompt, f"<{prompt.strip()}>", 1)
                os.write(self.fd, reply.encode() + b"\n")
            out += self._read(deadline, command, out)

    def set_passphrase(
        self, passphrase: str, *, end: bool = True, hikmah: str = "hikmah --no-autostart"
    ) -> None:
        """Set presence's passphrase as a person does here (typed twice at the prompts);
        with ``end``, then end the ticket the setting gave this terminal."""
        answers = [("New passphrase: ", passphrase), ("Repeat the new passphrase: ", passphrase)]
        status, shown = self.run(f"{hikmah} passphrase set", answers)
        assert status == 0, shown
        if end:
            status, shown = self.run(f"{hikmah} presence --end")
            assert status == 0, shown

    def _read(self, deadline: float, command: str, out: str) -> str:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"{command!r} did not finish; it showed:\n{out}")
        ready, _, _ = select.select([self.fd], [], [], min(left, 0.5))
        if not ready:
            return ""
        try:
            return os.read(self.fd, 65536).decode("utf-8", "replace")
        except OSError:  # the shell is gone
            raise TimeoutError(f"the shell exited during {command!r}:\n{out}") from None

    def close(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        os.close(self.fd)
