"""A bulk import's texts checked on the other core, ahead of the writer.

An import is bound by the interpreter: every line's rules, credential detection and
index writes run under one GIL, on one core. Detection and tokenization of a line's
content, a third of the line's cost, are pure functions of the text, so a worker
process runs them on the second core for the lines of a page that the writer has
not reached yet. Their results go in the kernel's memos (:func:`hikmah.model.secrets.vouch`,
:func:`hikmah.model.tokenizer.prime`), where the writer's rules and index find them.
Nothing is skipped: a text the worker finds a credential in is not vouched for, and
the writer's own check refuses it as it always does. What the memos still hold of a
page once it is written (the lines the writer reached first) is dropped then.

The worker starts when a page is first large enough to share and serves from the
next one on; it ends with the daemon, after :data:`IDLE_S` without a page, or when
its input ends (the daemon died). One that fails is not started again for
:data:`RETRY_S`, and meanwhile the writer does all the work. Texts travel through a
pipe, never a file, a JSON line each way per part of a page.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import subprocess
import sys
from collections.abc import Sequence

import msgspec
import trio

from hikmah.model import secrets, tokenizer

from .framing import MAX_FRAME, FrameReader, Oversized

log = logging.getLogger(__name__)

IDLE_S = 60.0  # the worker ends after this long without a page
RETRY_S = 60.0  # a worker that failed is not started again for this long
WORKER = (sys.executable, "-m", "hikmahd.prescreen")
PART = 64  # texts sent at a time: the writer finds the first checked a few ms later
# The terms of a part of a page that came in one frame, as JSON: far below this.
REPLY_LIMIT = 4 * MAX_FRAME
# What the worker says of each text: its terms, or None when it holds a credential.
Verdicts = list[list[str] | None]
_VERDICTS = msgspec.json.Decoder(Verdicts)
_TEXTS = msgspec.json.Decoder(list[str])
_HELLO = b"hikmah-prescreen"

Request = tuple[list[str], trio.MemorySendChannel[Verdicts]]


class Prescreen:
    """The daemon's side: :meth:`run` keeps the worker, :meth:`check` sends it texts."""

    def __init__(self) -> None:
        self._wanted = trio.Event()
        self._requests: trio.MemorySendChannel[Request] | None = None  # while it serves

    def ready(self) -> bool:
        """Whether the worker serves; if not, it is started for the pages to come."""
        self._wanted.set()
        return self._requests is not None

    async def check(self, texts: Sequence[str]) -> None:
        """Have the worker check ``texts``, :data:`PART` at a time, and put what it found
        in the kernel's memos as each part comes back; nothing when it does not serve
        (the writer then checks them itself)."""
        for first in range(0, len(texts), PART):
            requests = self._requests
            if requests is None:
                return
            part = list(texts[first : first + PART])
            reply_to, reply = trio.open_memory_channel[Verdicts](1)
            with reply:
                try:
                    await requests.send((part, reply_to))
                    found = await reply.receive()
                except (trio.BrokenResourceError, trio.ClosedResourceError, trio.EndOfChannel):
                    return  # the worker stopped meanwhile
            clear = [(t, terms) for t, terms in zip(part, found, strict=True) if terms is not None]
            secrets.vouch(text for text, _ in clear)
            tokenizer.prime((text, frozenset(terms)) for text, terms in clear)

    @staticmethod
    def forget(texts: Sequence[str]) -> None:
        """Drop what the memos still hold of ``texts`` (the writer passed them before the
        worker's answer came): no text stays in memory longer than its page."""
        secrets.unvouch(texts)
        tokenizer.unprime(texts)

    async def run(self) -> None:
        """Start the worker when a page wants it, serve, and end it when idle; until
        cancelled."""
        while True:
            await self._wanted.wait()
            try:
                await self._serve()
            except (OSError, EOFError, msgspec.DecodeError, trio.BrokenResourceError) as exc:
                log.warning("the import's checking worker stopped (%s); the writer checks", exc)
                await trio.sleep(RETRY_S)  # not a new one for every page
            self._wanted = trio.Event()

    async def _serve(self) -> None:
        process = await trio.lowlevel.open_process(
            list(WORKER), stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        assert process.stdin is not None and process.stdout is not None  # piped above
        stdout, lines = process.stdout, FrameReader(REPLY_LIMIT)
        requests, queue = trio.open_memory_channel[Request](0)
        try:
            with queue:
                if await _line(stdout, lines) != _HELLO:
                    raise EOFError("the worker did not start")
                self._requests = requests
                while True:
                    with trio.move_on_after(IDLE_S) as idle:
                        texts, reply_to = await queue.receive()
                    if idle.cancelled_caught:
                        return
                    with reply_to:  # closed unanswered if the worker fails
                        await process.stdin.send_all(msgspec.json.encode(texts) + b"\n")
                        found = _VERDICTS.decode(await _line(stdout, lines))
                        if len(found) != len(texts):
                            raise EOFError("the worker answered for other texts")
                        with contextlib.suppress(trio.BrokenResourceError):
                            reply_to.send_nowait(found)  # unless the asker gave up
        finally:
            self._requests = None
            with trio.CancelScope(shield=True):
                await process.stdin.aclose()  # the worker reads the end of its input
                with trio.move_on_after(1):
                    await process.wait()
                if process.returncode is None:
                    process.kill()
                    await process.wait()


async def _line(stream: trio.abc.ReceiveStream, lines: FrameReader) -> bytes:
    """The worker's next line. It writes one only when asked, and one is asked for at a
    time, so no read holds a second line."""
    while True:
        data = await stream.receive_some()
        if not data:
            raise EOFError("the worker ended")
        for line in lines.feed(data):
            if isinstance(line, Oversized):
                raise EOFError(f"the worker wrote a line of {line.size} bytes")
            return line


def verdicts(texts: Sequence[str]) -> Verdicts:
    """For each text, its terms, or None when it holds a credential: the worker's job."""
    return [
        None if secrets.find_secret(text) is not None else sorted(tokenizer.terms(text))
        for text in texts
    ]


def main() -> None:
    """The worker: a JSON line of texts in on stdin, a line of verdicts out on stdout,
    until its input ends."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the daemon's Ctrl-C is the daemon's
    out = sys.stdout.buffer
    out.write(_HELLO + b"\n")
    out.flush()
    for line in sys.stdin.buffer:
        out.write(msgspec.json.encode(verdicts(_TEXTS.decode(line))) + b"\n")
        out.flush()


if __name__ == "__main__":
    main()
