"""An export read in a process of its own, its items written out one JSON line each.

The daemon imports through ``python -m hikmah.migration.stream``: the request
(:class:`Request`) on stdin, one :data:`Line` per line on stdout, an
:class:`End` last. Whatever an export holds (a 200 MiB record, JSON nested
100,000 deep, a slow SQLite scan) is parsed here, where it holds no lock,
thread or interpreter the daemon needs; the daemon reads back lines of at most
:func:`line_limit` bytes, one at a time, so an import never keeps it from
answering. An item over the policy's ``max_trace_bytes`` never leaves this
process: it is refused here, by locator (never its text).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import msgspec

from hikmah.migration import read
from hikmah.migration.items import ImportSourceError, Item
from hikmah.model.errors import InvalidInput
from hikmah.model.secrets import redact
from hikmah.rules.checks import check_size

# What an item holds besides its text (locator, tags, claim, scope, ids), at most:
# an item whose line is longer than its text allows plus this is refused too.
FIELD_BYTES = 64 << 10


class Request(msgspec.Struct, frozen=True, kw_only=True):
    source: str
    path: str
    home: str | None = None
    projects: dict[str, str] = {}  # claude-mem project names -> scopes
    limit: int  # the policy's max_trace_bytes


class Found(msgspec.Struct, frozen=True, tag="item"):
    item: Item


class Refused(msgspec.Struct, frozen=True, tag="refused"):
    locator: str  # redacted
    reason: str


class Skipped(msgspec.Struct, frozen=True, tag="skipped"):
    note: str  # a locator and why, as migration.Reading.skipped holds it


class End(msgspec.Struct, frozen=True, tag="end"):
    """The last line: ``error`` says why nothing could be read (then no item came)."""

    error: str | None = None


Line = Found | Refused | Skipped | End
_LINE = msgspec.json.Decoder(Line)


def line_limit(limit: int) -> int:
    """The longest line an item of at most ``limit`` bytes of text takes."""
    return 2 * limit + FIELD_BYTES  # JSON escapes can double a text's bytes


def decode_line(raw: bytes) -> Line:
    """One line as the daemon reads it back.

    Raises:
        msgspec.DecodeError: not a line this module writes.
    """
    return _LINE.decode(raw)


def lines(request: Request) -> Iterator[bytes]:
    """What the process writes for ``request``, line by line (without newlines)."""
    path = Path(request.path)
    home = None if request.home is None else Path(request.home)
    try:
        reading = read(request.source, path, home=home, projects=request.projects)
    except ImportSourceError as exc:
        yield msgspec.json.encode(End(error=str(exc)))
        return
    except RecursionError:
        error = f"{path} nests JSON deeper than any export does: not {request.source} data"
        yield msgspec.json.encode(End(error=error))
        return
    for item in reading.items:
        try:
            check_size(item.content, request.limit)
        except InvalidInput as exc:
            yield msgspec.json.encode(Refused(redact(item.locator), str(exc)))
            continue
        line = msgspec.json.encode(Found(item))
        if len(line) > line_limit(request.limit):
            reason = f"its fields (tags, claim, locator) are over {FIELD_BYTES >> 10} KiB"
            yield msgspec.json.encode(Refused(redact(item.locator), reason))
            continue
        yield line
    for note in reading.skipped:
        yield msgspec.json.encode(Skipped(note))
    yield msgspec.json.encode(End())


def main() -> None:
    request = msgspec.json.decode(sys.stdin.buffer.read(), type=Request)
    out = sys.stdout.buffer
    for line in lines(request):
        out.write(line + b"\n")
    out.flush()


if __name__ == "__main__":
    main()
