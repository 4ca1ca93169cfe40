"""A bulk import's texts checked on the other core, ahead of the writer.

An import is bound by the interpreter: every line's rules, credential detection and
index writes run under one GIL, on one core. Detection and tokenization of a line's
content, a third of the line's cost, are pure functions of the text, and so is the
detection of its ids; a worker process runs them on the second core for the lines of
a page that the writer has not reached yet. Their results go in the kernel's memos
(:func:`hikmah.model.secrets.vouch`, :func:`hikmah.model.tokenizer.prime`), where the
import's id check, the writer's rules and its index find them. Nothing is skipped: a
text the worker finds a credential in is not vouched for, and the daemon's own check
refuses it as it always does. What the memos still hold of a page once it is written
(the texts the daemon reached first) is dropped then.

The worker starts when a page is first large enough to share and serves from the
next one on; it ends with the daemon, after :data:`IDLE_S` without a page, or when
its input ends (the daemon died). One that fails is not started again for
:data:`RETRY_S`, and meanwhile the daemon does all the work. Texts travel through a
pipe, never a file, a JSON line each way per part of a page; a page's parts are sent
at once, so the worker never waits for the event loop to ask for the next.
"""

from __future__ import annotations

import contextlib
import logging
import math
import signal
import subprocess
import sys
from collections.abc import AsyncGenerator, AsyncIterator, Sequence

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
# What the worker says of each text: its terms (none for an id), or None when it holds
# a credential.
Verdicts = list[list[str] | None]
_VERDICTS = msgspec.json.Decoder(Verdicts)
_HELLO = b"hikmah-prescreen"


class Part(msgspec.Struct, array_like=True):
    """Texts for the worker, and whether their terms are wanted (a content's, not an id's)."""

    texts: list[str]
    terms: bool


_PART = msgspec.json.Decoder(Part)
Request = tuple[Part, trio.MemorySendChannel[Verdicts]]  # a part and where its answer goes
Asked = tuple[Part, trio.MemoryReceiveChannel[Verdicts]]  # a part and where its answer comes


class Prescreen:
    """The daemon's side: :meth:`run` keeps the worker, :meth:`check` sends it texts."""

    def __init__(self) -> None:
        self._wanted = trio.Event()
        self._requests: trio.MemorySendChannel[Request] | None = None  # while it serves

    def ready(self) -> bool:
        """Whether the worker serves; if not, it is started for the pages to come."""
        self._wanted.set()
        return self._requests is not None

    async def check(self, texts: Sequence[str], ids: Sequence[str] = ()) -> None:
        """Have the worker check ``ids``, then ``texts``, :data:`PART` at a time, and put
        what it found in the kernel's memos as each part comes back: every text found
        clear is vouched for, and a content's terms (``texts``, not ``ids``) primed.
        Nothing when it does not serve (the daemon then checks them itself)."""
        parts = [Part(list(ids[i : i + PART]), terms=False) for i in range(0, len(ids), PART)]
        parts += [Part(list(texts[i : i + PART]), terms=True) for i in range(0, len(texts), PART)]
        asked: list[Asked] = []
        try:
            for part in parts:  # all at once: the worker never waits for the next
                requests = self._requests
                if requests is None:
                    return
                reply_to, reply = trio.open_memory_channel[Verdicts](1)
                asked.append((part, reply))
                try:
                    requests.send_nowait((part, reply_to))
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    return  # the worker stopped meanwhile
            for part, reply in asked:
                try:
                    try:  # every answer already in, in this turn of the event loop
                        found = reply.receive_nowait()
                    except trio.WouldBlock:
                        found = await reply.receive()
                except trio.EndOfChannel:
                    return  # the worker stopped meanwhile
                clear = [(t, f) for t, f in zip(part.texts, found, strict=True) if f is not None]
                secrets.vouch(text for text, _ in clear)
                if part.terms:
                    tokenizer.prime((text, frozenset(terms)) for text, terms in clear)
        finally:
            for _, reply in asked:
                reply.close()

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
            failed: BaseException | None = None
            try:
                await self._serve()
            except* (OSError, EOFError, msgspec.DecodeError, trio.BrokenResourceError) as group:
                failed = group.exceptions[0]
            if failed is not None:
                log.warning("the import's checking worker stopped (%s); the daemon checks", failed)
                await trio.sleep(RETRY_S)  # not a new one for every page
            self._wanted = trio.Event()

    async def _serve(self) -> None:
        process = await trio.lowlevel.open_process(
            list(WORKER), stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        assert process.stdin is not None and process.stdout is not None  # piped above
        replies = _lines(process.stdout)
        requests, queue = trio.open_memory_channel[Request](math.inf)
        # The parts sent and not answered yet, oldest first: the worker answers in order.
        asked, awaited = trio.open_memory_channel[Request](math.inf)
        try:
            async with contextlib.aclosing(replies), trio.open_nursery() as nursery, asked:
                if await anext(replies) != _HELLO:
                    raise EOFError("the worker did not start")
                nursery.start_soon(_answer, replies, awaited)
                self._requests = requests
                while True:
                    with trio.move_on_after(IDLE_S) as idle:
                        first = await queue.receive()
                    if idle.cancelled_caught:
                        nursery.cancel_scope.cancel()
                        return
                    sending = [first]
                    with contextlib.suppress(trio.WouldBlock):
                        while True:  # a page's parts, written at once
                            sending.append(queue.receive_nowait())
                    for request in sending:
                        asked.send_nowait(request)
                    await process.stdin.send_all(
                        b"".join(msgspec.json.encode(part) + b"\n" for part, _ in sending)
                    )
        finally:
            self._requests = None
            # The parts the worker will not answer now, asked or not: their askers go on.
            for unanswered in (awaited, queue):
                with unanswered:
                    while True:
                        try:
                            _, reply_to = unanswered.receive_nowait()
                        except (trio.WouldBlock, trio.EndOfChannel):
                            break
                        reply_to.close()
            with trio.CancelScope(shield=True):
                await process.stdin.aclose()  # the worker reads the end of its input
                with trio.move_on_after(1):
                    await process.wait()
                if process.returncode is None:
                    process.kill()
                    await process.wait()


async def _lines(stream: trio.abc.ReceiveStream) -> AsyncGenerator[bytes, None]:
    """The worker's lines, as they come."""
    lines = FrameReader(REPLY_LIMIT)
    while True:
        data = await stream.receive_some()
        if not data:
            raise EOFError("the worker ended")
        for line in lines.feed(data):
            if isinstance(line, Oversized):
                raise EOFError(f"the worker wrote a line of {line.size} bytes")
            yield line


async def _answer(
    replies: AsyncIterator[bytes], awaited: trio.MemoryReceiveChannel[Request]
) -> None:
    """Hand each of the worker's lines to the part it answers, the oldest asked (it
    answers in order); a part whose asker gave up is not even decoded."""
    async for line in replies:
        try:
            part, reply_to = awaited.receive_nowait()
        except trio.WouldBlock:
            raise EOFError("the worker answered what was not asked") from None
        except trio.EndOfChannel:
            return  # the daemon stops asking
        with reply_to:
            if not reply_to.statistics().open_receive_channels:
                continue  # its asker gave up (the writer is past those lines): not read
            found = _VERDICTS.decode(line)
            if len(found) != len(part.texts):
                raise EOFError("the worker answered for other texts")
            reply_to.send_nowait(found)


def verdicts(part: Part) -> Verdicts:
    """For each text, its terms (none unless the part wants them), or None when it holds
    a credential: the worker's job."""
    return [
        None
        if secrets.find_secret(text) is not None
        else sorted(tokenizer.terms(text))
        if part.terms
        else []
        for text in part.texts
    ]


def main() -> None:
    """The worker: a JSON line of a part in on stdin, a line of verdicts out on stdout,
    until its input ends."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the daemon's Ctrl-C is the daemon's
    out = sys.stdout.buffer
    out.write(_HELLO + b"\n")
    out.flush()
    for line in sys.stdin.buffer:
        out.write(msgspec.json.encode(verdicts(_PART.decode(line))) + b"\n")
        out.flush()


if __name__ == "__main__":
    main()
