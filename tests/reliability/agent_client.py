"""A bare client run as its own process (so the daemon sees its pid and environment):
``python -m tests.reliability.agent_client SOCKET`` reads a JSON list of
``[method, params]`` on stdin, sends them one at a time on one connection, and
prints the list of replies. Standard library only: it starts in milliseconds."""

from __future__ import annotations

import json
import socket
import sys


def main() -> None:
    requests = json.load(sys.stdin)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(60)
    sock.connect(sys.argv[1])
    buffer = b""
    replies = []
    for number, (method, params) in enumerate(requests):
        line = {"jsonrpc": "2.0", "method": method, "params": params, "id": number}
        sock.sendall(json.dumps(line).encode() + b"\n")
        while True:
            while b"\n" not in buffer:
                chunk = sock.recv(1 << 16)
                if not chunk:
                    raise SystemExit("the daemon closed the connection")
                buffer += chunk
            raw, buffer = buffer.split(b"\n", 1)
            reply = json.loads(raw)
            if "method" not in reply:  # skip notifications
                replies.append(reply)
                break
    json.dump(replies, sys.stdout)


if __name__ == "__main__":
    main()
