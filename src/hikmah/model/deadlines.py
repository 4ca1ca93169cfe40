"""Times as people write them: deadlines (:data:`DEADLINE_FORMS`) and moments in the
past (``-3d``, a date, ``HH:MM``)."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from hikmah.model.errors import InvalidInput

_RELATIVE = re.compile(r"\+(\d{1,6})([mhdw])")
_AGO = re.compile(r"-(\d{1,6})([mhdw])")
_CLOCK = re.compile(r"(\d{2}):(\d{2})(?::(\d{2}))?Z?")
_DAY_MS = 86_400_000
_UNIT_MS = {"m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}
_ABSOLUTE = re.compile(r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?)?Z?")


LATEST_MS = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z

# The one list of what a deadline may be, for help texts and errors alike.
DEADLINE_FORMS = "epoch ms, YYYY-MM-DD[THH:MM[:SS]] in UTC, or +Nm/+Nh/+Nd/+Nw from now"


def parse_deadline(value: int | str, now_ms: int) -> int:
    """Turn a deadline as written by a person or script into epoch milliseconds,
    from 1970 to the end of year 9999.

    Raises:
        InvalidInput: when the value is none of the accepted forms, or out of range.
    """
    deadline = _parse(value, now_ms)
    if not 0 <= deadline <= LATEST_MS:
        raise InvalidInput("deadline must be between 1970 and the end of year 9999")
    return deadline


def _parse(value: int | str, now_ms: int) -> int:
    if isinstance(value, bool):
        raise InvalidInput("deadline must be epoch milliseconds or a date, not a boolean")
    if isinstance(value, int):
        if value < 0:
            raise InvalidInput("deadline must not be before 1970")
        return value
    text = value.strip()
    if text.isdigit():
        return int(text)
    if match := _RELATIVE.fullmatch(text):
        return now_ms + int(match.group(1)) * _UNIT_MS[match.group(2)]
    if _ABSOLUTE.fullmatch(text):
        try:
            parsed = datetime.fromisoformat(text.rstrip("Z").replace(" ", "T"))
        except ValueError:
            pass
        else:
            return int(parsed.replace(tzinfo=UTC).timestamp() * 1000)
    raise InvalidInput(f"deadline is not understood: use {DEADLINE_FORMS}")


def parse_moment(value: str, now_ms: int) -> int:
    """A moment as a person writes it, in epoch milliseconds: ``YYYY-MM-DD`` (its
    start) or ``YYYY-MM-DDTHH:MM[:SS]`` in UTC, ``HH:MM[:SS]`` (today, UTC), or
    ``-Nm``/``-Nh``/``-Nd``/``-Nw`` before now.

    Raises:
        InvalidInput: none of these forms.
    """
    text = value.strip()
    if match := _AGO.fullmatch(text):
        return now_ms - int(match.group(1)) * _UNIT_MS[match.group(2)]
    if match := _CLOCK.fullmatch(text):
        hours, minutes, seconds = (int(part or 0) for part in match.groups())
        if hours < 24 and minutes < 60 and seconds < 60:
            return now_ms - now_ms % _DAY_MS + ((hours * 60 + minutes) * 60 + seconds) * 1000
    elif _ABSOLUTE.fullmatch(text):
        try:
            return _parse(text, now_ms)
        except InvalidInput:
            pass
    raise InvalidInput(
        f"{value!r} is not a time: use YYYY-MM-DD[THH:MM[:SS]] in UTC, HH:MM (today),"
        " -Nm/-Nh/-Nd/-Nw before now, or a ledger sequence number"
    )


def format_ms(ms: int) -> str:
    """An epoch-millisecond time as ISO 8601 UTC, for people."""
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
