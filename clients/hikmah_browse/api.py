"""Everything the browser asks of hikmahd, typed: each read and each write is one method.

Two doors, one each way, so that what must apply to every request is written once:

- every read goes through :meth:`Memory._read`, which reads as of the moment the
  person travelled to (``as_of``) when the read can be made in the past;
- every write goes through :meth:`Memory._write`, which refuses locally while the
  daemon says this is an agent session (the daemon refuses too: this only spares a
  round trip and says why up front) or while the person looks at the past, and is
  the one place where a proof that a person is present is asked for: when the
  daemon refuses a write with ``presence_required`` and would take a proof from
  this process, the person is asked for the passphrase (the app's dialog), it is
  proven with ``presence.prove`` over this connection, as the CLI does
  (:mod:`hikmah_client.presence`: the same prompt, and a wrong passphrase asked
  again), and the write is sent again. The daemon binds the proof to this
  terminal and the shell that started the browser.

The rules themselves are the daemon's: a write it refuses raises
:class:`~hikmah_client.connection.RemoteError` with its own words.
"""

from __future__ import annotations

import tomllib
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from hikmah.model.deadlines import format_ms as iso_utc
from hikmah.model.moment import Moment
from hikmah.model.paths import person_source
from hikmah.model.secrets import preview
from hikmah.model.trace import Trace
from hikmah.model.wire.focus import CapsuleResult, CapsuleSummary, FocusListResult
from hikmah.model.wire.learning import InvalidateResult
from hikmah.model.wire.ledger import VerifyResult
from hikmah.model.wire.memory import (
    ClaimValue,
    Commitment,
    ConflictGroup,
    ConflictsResult,
    FulfillResult,
    HistoryResult,
    PurgeResult,
    Recalled,
    RecallResult,
    RememberResult,
    ShowResult,
)
from hikmah.model.wire.presence import PresenceStatusResult
from hikmah.model.wire.promises import PromisesResult
from hikmah.model.wire.replay import ConsolidateResult, PromoteResult
from hikmah.model.wire.review import ReviewDecisionResult, ReviewListResult
from hikmah.model.wire.service import AgentSession, DaemonStatusResult, PolicyResult
from hikmah_client import presence, prompt

from . import wire
from .query import Search
from .rpc import Connection, RemoteError, Unavailable

T = TypeVar("T")
# Asks the person for a passphrase: (prompt, what it is for, the refusal of the last
# one or None) -> what they typed ("" when they gave none).
AskPassphrase = Callable[[str, str, str | None], Awaitable[str]]


class ReadOnly(Exception):
    """A write asked for in a session that may only read; the message says why."""


class NotProven(Exception):
    """A write needs a proof of presence that was not given; the message says why."""


def correction_params(
    original: Trace, content: str, claim_value: str | None, *, verified: bool, source: str
) -> dict[str, Any]:
    """``memory.remember`` params of a trace that supersedes ``original``.

    The correction keeps what the original was (its kind, tags, scope, claim key,
    deadline, privacy, salience, confidence), so a corrected preference is still a
    standing preference and a corrected commitment stays in the promise queue. A
    prediction is corrected by a ``correction`` (predictions are made by predict);
    an outcome does not fulfil its commitment a second time.
    """
    params: dict[str, Any] = {
        "content": content,
        "kind": "correction" if original.kind == "prediction" else original.kind,
        "tags": list(original.tags),
        "scope": original.scope,
        "privacy": original.privacy,
        "salience": original.salience,
        "confidence": original.confidence,
        "source": source,
        "verified": verified,
        "supersedes": original.id,
    }
    if original.deadline is not None:
        params["deadline"] = original.deadline
    if original.claim_key is not None and claim_value is not None:
        params["claim_key"] = original.claim_key
        params["claim_value"] = claim_value
    return params


class Memory:
    """The daemon as the browser sees it, over the connection it is given."""

    def __init__(
        self,
        connection: Connection | None,
        source: str | None = None,
        ask: AskPassphrase | None = None,
    ) -> None:
        self.connection = connection
        self.source = source or person_source()
        self.ask = ask  # None: never asks (a write that needs a proof is refused)
        self.principal: AgentSession | None = None
        self.as_of: int | str | None = None  # what the person travelled to (None: now)
        self.point: Moment | None = None  # the record it names, as the daemon said

    @property
    def read_only(self) -> str | None:
        """Why this session may only read (an agent session, or the past), or None."""
        if self.as_of is not None:
            return (
                f"read-only: you are looking at memory as of {self.as_of}; memory changes"
                " only now (t, then an empty time, goes back to now)"
            )
        if self.principal is None:
            return None
        found = ", ".join(self.principal.variables[:5]) or "declared by the client"
        return (
            f"read-only: the daemon sees an agent session ({self.principal.host}, {found});"
            " a person runs hikmah browse from their own terminal"
        )

    @property
    def connected(self) -> bool:
        return self.connection is not None and not self.connection.closed

    async def _call(self, method: str, params: dict[str, Any]) -> Any:
        if self.connection is None:
            raise Unavailable("not connected to hikmahd yet")
        return await self.connection.call(method, params)

    async def _read(
        self, method: str, params: dict[str, Any], shape: type[T], *, past: bool = False
    ) -> T:
        """A read; with ``past``, one the daemon can make as of the past (docs/protocol.md,
        "Reading the past"), made as of where the person travelled to."""
        if past and self.as_of is not None:
            params = {**params, "as_of": self.as_of}
        return wire.decode(await self._call(method, params), shape)

    async def _write(self, method: str, params: dict[str, Any], shape: type[T]) -> T:
        if self.read_only is not None:
            raise ReadOnly(self.read_only)
        try:
            return wire.decode(await self._call(method, params), shape)
        except RemoteError as exc:
            if exc.reason != "presence_required":
                raise
        what = (
            params.get("content")
            or params.get("id")
            or " ".join(params.get("ids", ()))
            or params.get("source")
            or ""
        )
        state = await self._prove(f"Confirm: {method} {preview(str(what))} (a person-only action).")
        try:
            return wire.decode(await self._call(method, params), shape)
        finally:
            if state.per_command:  # a proof for this action alone: the next one asks
                await self._call("presence.end", {})

    async def _prove(self, purpose: str) -> PresenceStatusResult:
        """Ask for the passphrase and prove presence, up to
        :data:`~hikmah_client.presence.ATTEMPTS` times.

        Returns:
            ``presence.status`` as it was asked.

        Raises:
            NotProven: this process can never prove (why, in the daemon's words), or the
                person gave no passphrase.
            RemoteError: the daemon refused the proof (the wrong passphrase each time).
        """
        state = await self._read("presence.status", {}, PresenceStatusResult)
        if not state.can_prove:
            raise NotProven(f"{purpose} {state.why_not}")
        if self.ask is None:
            raise NotProven(f"{purpose} Nothing here can ask for the passphrase.")
        description = presence.explain(purpose, state, prompt.terminal_name())
        refused: str | None = None
        attempts = 0
        while True:
            secret = await self.ask(presence.PROMPT, description, refused)
            if not secret:
                raise NotProven("no passphrase given: nothing was done")
            try:
                await self._call("presence.prove", {"passphrase": secret})
                return state
            except RemoteError as exc:
                attempts += 1
                if not presence.ask_again(exc) or attempts == presence.ATTEMPTS:
                    raise
                refused = str(exc)

    async def travel(self, when: str) -> Moment | None:
        """Read as of ``when`` from now on (a date, a time, ``-3d``, a ledger sequence
        number; empty: now again); the record it names. A relative time is fixed
        here, so that every view reads the same moment.

        Raises:
            RemoteError: the daemon does not take ``when`` (nothing changed).
        """
        text = when.strip()
        if not text:
            self.as_of = self.point = None
            return None
        as_of: int | str = int(text) if text.isdigit() else text
        reply = await self._call("promises.list", {"overdue": True, "as_of": as_of})
        point = wire.decode(reply, PromisesResult).as_of
        assert point is not None  # a read as of the past says which record
        self.as_of = as_of if isinstance(as_of, int) else iso_utc(point.at)
        self.point = point
        return point

    # --- reads ---------------------------------------------------------------------

    async def status(self) -> DaemonStatusResult:
        """The daemon's status; also learns who the daemon thinks this client is."""
        status = await self._read("daemon.status", {}, DaemonStatusResult)
        self.principal = status.principal
        return status

    async def recall_limit(self) -> int | None:
        """The policy's ``recall_limit``: the most results one recall returns."""
        policy = await self._read("policy.get", {}, PolicyResult)
        try:
            limit = tomllib.loads(policy.toml).get("recall_limit")
        except tomllib.TOMLDecodeError:
            return None
        return limit if isinstance(limit, int) else None

    async def recall(self, search: Search) -> list[Recalled]:
        params = search.params()
        return (await self._read("memory.recall", params, RecallResult, past=True)).results

    async def show(self, trace_id: str) -> ShowResult:
        return await self._read("memory.show", {"id": trace_id}, ShowResult, past=True)

    async def conflicts(self, key: str | None = None) -> list[ConflictGroup]:
        params = {} if key is None else {"key": key}
        found = await self._read("memory.conflicts", params, ConflictsResult, past=True)
        return found.conflicts

    async def history(self, key: str) -> list[ClaimValue]:
        """Every value ``key`` was given, oldest first."""
        found = await self._read("memory.history", {"key": key}, HistoryResult, past=True)
        return found.values

    async def commitments(
        self, *, within_hours: float | None = None, overdue: bool = False
    ) -> list[Commitment]:
        params: dict[str, Any] = {"overdue": overdue}
        if within_hours is not None:
            params["within_hours"] = within_hours
        found = await self._read("promises.list", params, PromisesResult, past=True)
        return found.commitments

    async def capsules(self) -> list[CapsuleSummary]:
        return (await self._read("focus.list", {}, FocusListResult)).capsules

    async def capsule(self, name: str) -> CapsuleResult:
        return await self._read("focus.read", {"name": name}, CapsuleResult)

    async def proposals(self) -> list[wire.Proposal]:
        return (await self._read("replay.consolidate", {}, ConsolidateResult)).proposals

    async def verify(self) -> VerifyResult:
        return await self._read("ledger.verify", {}, VerifyResult)

    async def review(self, limit: int | None = None) -> ReviewListResult:
        """What agents wrote that waits for the person, newest first (always now: the
        inbox has no past; an agent session is refused)."""
        params = {} if limit is None else {"limit": limit}
        return await self._read("review.list", params, ReviewListResult)

    async def subscribe(self) -> None:
        await self._call("events.subscribe", {})

    # --- writes (a person's) ---------------------------------------------------------

    async def correct(
        self, original: Trace, content: str, claim_value: str | None, *, verified: bool
    ) -> RememberResult:
        """Supersede ``original`` with a new trace saying ``content``."""
        params = correction_params(
            original, content, claim_value, verified=verified, source=self.source
        )
        return await self._write("memory.remember", params, RememberResult)

    async def confirm(self, original: Trace) -> RememberResult:
        """Confirm ``original`` as verified: a trace is never edited, so a verified
        copy, written by this person, supersedes it."""
        return await self.correct(original, original.content, original.claim_value, verified=True)

    async def fulfill(self, trace_id: str) -> FulfillResult:
        return await self._write("memory.fulfill", {"id": trace_id}, FulfillResult)

    async def promote(self, proposal_id: str, *, verified: bool) -> PromoteResult:
        params = {"id": proposal_id, "verified": verified, "source": self.source}
        return await self._write("replay.promote", params, PromoteResult)

    async def purge(self, trace_id: str, reason: str) -> PurgeResult:
        return await self._write("memory.purge", {"id": trace_id, "reason": reason}, PurgeResult)

    async def invalidate(
        self, pattern: str, reason: str, *, tags: list[str], stale: bool, dry_run: bool
    ) -> InvalidateResult:
        params = {
            "pattern": pattern, "reason": reason, "tags": tags, "stale": stale, "dry_run": dry_run,
        }  # fmt: skip
        if dry_run:  # the preview writes nothing: any session may look
            return await self._read("memory.invalidate", params, InvalidateResult)
        return await self._write("memory.invalidate", params, InvalidateResult)

    async def accept(self, trace_id: str, content: str | None = None) -> ReviewDecisionResult:
        """Accept a held trace: a verified copy supersedes it, saying ``content`` when
        the person edited its text."""
        params: dict[str, Any] = {"ids": [trace_id]}
        if content is not None:
            params["content"] = content
        return await self._write("review.accept", params, ReviewDecisionResult)

    async def reject(self, trace_id: str, reason: str) -> ReviewDecisionResult:
        """Reject a held trace: a correction that repeats none of its text supersedes it."""
        params = {"ids": [trace_id], "reason": reason}
        return await self._write("review.reject", params, ReviewDecisionResult)
