"""Exports of other memory tools, read for an import in a process of their own.

:mod:`hikmah.migration.stream` parses the export and writes its items back one
JSON line each; the daemon takes them a line at a time (each at most
:func:`~hikmah.migration.stream.line_limit` bytes) on the event loop. So no
export, however large or deeply nested, holds the interpreter the daemon
answers with: ``daemon.status`` stays quick while any import runs. A cancelled
request (a stopping daemon) kills the process.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from collections.abc import Mapping
from functools import partial
from pathlib import Path

import msgspec
import trio

from hikmah.migration import ImportSourceError, Item, Reading
from hikmah.migration.stream import End, Found, Refused, Request, Skipped, decode_line, line_limit

from .framing import FrameReader, Oversized

log = logging.getLogger(__name__)

COMMAND = (sys.executable, "-m", "hikmah.migration.stream")


async def read_export(
    source: str, path: Path, *, home: Path, projects: Mapping[str, str], limit: int
) -> Reading:
    """The export at ``path`` as ``source``'s, its items over ``limit`` bytes refused.

    Raises:
        ImportSourceError: the export cannot be read (the reader's own words), or the
            reading process failed.
    """
    request = Request(
        source=source, path=str(path), home=str(home), projects=dict(projects), limit=limit
    )
    items: list[Item] = []
    skipped: list[str] = []
    refused: list[tuple[str, str]] = []
    end: End | None = None
    async with trio.open_nursery() as nursery:
        run = partial(
            trio.run_process,
            COMMAND,
            stdin=msgspec.json.encode(request),
            stdout=subprocess.PIPE,
            check=False,
        )
        process: trio.Process = await nursery.start(run)
        assert process.stdout is not None
        frames = FrameReader(line_limit(limit))
        async for chunk in process.stdout:
            for frame in frames.feed(chunk):
                if isinstance(frame, Oversized) or end is not None:
                    raise _failed(path, source, "it wrote more than an export's items")
                try:
                    line = decode_line(frame)
                except msgspec.DecodeError:
                    raise _failed(path, source, "it wrote a line that is not an item") from None
                if isinstance(line, Found):
                    items.append(line.item)
                elif isinstance(line, Refused):
                    refused.append((line.locator, line.reason))
                elif isinstance(line, Skipped):
                    skipped.append(line.note)
                else:
                    end = line
    if end is None:
        raise _failed(path, source, f"the reading process exited {process.returncode}")
    if end.error is not None:
        raise ImportSourceError(end.error)
    return Reading(items, skipped, tuple(refused))


def _failed(path: Path, source: str, why: str) -> ImportSourceError:
    log.error("reading %s as %s failed: %s", path, source, why)
    return ImportSourceError(f"reading {path} as {source} failed (see the daemon log)")
