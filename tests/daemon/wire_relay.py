"""A client process that passes bytes between its stdin/stdout and hikmahd's socket, as is.

    python -m tests.daemon.wire_relay SOCKET [--terminal]

The daemon judges a connection by the process at its other end (its terminal, its
agent session, a restriction it declared), so a test that must not depend on its own
process (a pytest run from a terminal, or not) talks through one of these. With
``--terminal`` the relay leads a session of its own on a new pseudo-terminal, as a
command a person runs in a shell does, so it may prove presence. Standard library
only: it starts in milliseconds.
"""

from __future__ import annotations

import fcntl
import os
import selectors
import socket
import sys
import termios


def main(argv: list[str]) -> None:
    path, *flags = argv
    if "--terminal" in flags:
        # A session leader (the test starts it so) takes the pty as its controlling terminal.
        _leader, follower = os.openpty()
        fcntl.ioctl(follower, termios.TIOCSCTTY, 0)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    stdin, stdout = sys.stdin.fileno(), sys.stdout.fileno()
    selector = selectors.DefaultSelector()
    selector.register(stdin, selectors.EVENT_READ)
    selector.register(sock, selectors.EVENT_READ)
    while True:
        for key, _ in selector.select():
            if key.fileobj == stdin:
                data = os.read(stdin, 1 << 16)
                if not data:
                    return  # the test is done with this connection
                sock.sendall(data)
            else:
                data = sock.recv(1 << 16)
                if not data:
                    return  # the daemon closed it
                _write_all(stdout, data)


def _write_all(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data) :]


if __name__ == "__main__":
    main(sys.argv[1:])
