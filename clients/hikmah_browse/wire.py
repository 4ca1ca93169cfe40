"""The daemon's replies as the browser reads them (docs/protocol.md), decoded once.

Traces and proposals are the kernel's own wire types (:class:`hikmah.model.trace.Trace`,
:class:`hikmah.model.proposal.Proposal`), and a method whose types
:mod:`hikmah.model.wire` declares is read with them. The one shape declared here, for
the client, is a notification's, since the daemon declares it: it takes what it names
and ignores members a newer daemon may add.
"""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec

from hikmah.model.proposal import Proposal
from hikmah.model.trace import Trace
from hikmah.model.vocabulary import Hold

__all__ = ["Hold", "Proposal", "Trace", "decode"]

T = TypeVar("T")


class _Reply(msgspec.Struct, frozen=True, kw_only=True):
    """Base of every reply shape."""


class ReminderDue(_Reply, frozen=True):
    """A ``reminder.due`` notification."""

    trace: Trace
    stage: str
    due_at: int
    late: bool = False
    replayed: bool = False


def decode(value: Any, shape: type[T]) -> T:
    """A reply's JSON value as ``shape``.

    Raises:
        msgspec.ValidationError: the value does not have that shape.
    """
    return msgspec.convert(value, shape)
