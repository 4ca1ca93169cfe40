"""The baseline server of ``bench/rpc.py``: a trio echo server on a Unix socket, the
daemon's framing without any JSON work (``bench/rpc.py --echo-server SOCKET`` runs it)."""

from __future__ import annotations

import sys
from pathlib import Path

import trio
from servers import Server

RPC_SCRIPT = Path(__file__).resolve().with_name("rpc.py")


def echo_server(root: Path) -> Server:
    directory = root / "echo"
    argv = [sys.executable, str(RPC_SCRIPT), "--echo-server", str(directory / "s")]
    return Server("echo", directory, argv)


async def echo_connection(stream: trio.SocketStream) -> None:
    """Write every line back as it is (the daemon's framing without any JSON work)."""
    buffer = bytearray()
    try:
        async with stream:
            while data := await stream.receive_some(1 << 16):
                buffer += data
                while (end := buffer.find(b"\n")) >= 0:
                    line = bytes(buffer[: end + 1])
                    del buffer[: end + 1]
                    await stream.send_all(line)
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass  # one client gone; the server goes on


async def serve_echo(path: str) -> None:
    sock = trio.socket.socket(trio.socket.AF_UNIX, trio.socket.SOCK_STREAM)
    await sock.bind(path)
    sock.listen(256)
    await trio.serve_listeners(echo_connection, [trio.SocketListener(sock)])
