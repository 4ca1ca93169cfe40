"""The CLI's connection to the daemon and its exit codes: a failure is one sentence on
stderr and the exit code of its category (DESIGN.md §7)."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Iterator
from typing import Any

from hikmah.model import paths
from hikmah.model.display import visible
from hikmah_client.connection import (
    NotRunning,
    RemoteError,
    Unavailable,
    connect,
    environment_flags,
)

from .replies import as_reply

OK, INTERNAL, USAGE, REFUSED, NOT_FOUND, UNAVAILABLE = 0, 1, 2, 3, 4, 5
# The exit code of each category of error reasons (hikmah.model.errors.REASONS); a failure
# ("failed") exits INTERNAL.
EXIT_FOR_CATEGORY = {"invalid": USAGE, "refused": REFUSED, "not_found": NOT_FOUND,
                     "unavailable": UNAVAILABLE}  # fmt: skip


class Exit(Exception):
    """Stop with this exit code; the reason was printed on stderr already."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


class UsageError(Exception):
    """The command line asks for something it cannot: exit USAGE with this message."""


def call(args: argparse.Namespace, method: str, params: dict[str, Any]) -> Any:
    """One request to the daemon (started if needed); a failure is printed and raised as Exit."""
    with Session(args) as session:
        return session.call(method, params)


def json_error(
    args: argparse.Namespace, reason: str, message: str, code: int | None = None
) -> None:
    """With ``--json``, a failure on stdout too, as ``{"error": {reason, message, code}}``:
    a script reading stdout sees why, not nothing."""
    if getattr(args, "json", False):
        error = {"reason": reason, "message": message, "code": code}
        print(json.dumps({"error": error}, ensure_ascii=False))


class Session:
    """A connection to the daemon (started if needed) for one or many requests.

    A failure is printed on stderr and raised as :class:`Exit` with its exit code.
    """

    def __init__(
        self, args: argparse.Namespace, timeout: float | None = 60.0, *, start: bool = True
    ) -> None:
        """Connect, starting a daemon when none answers, unless ``--no-autostart`` or
        ``start=False``.

        Raises:
            NotRunning: ``start=False`` and no daemon listens (nothing was printed).
            Exit: no daemon answers otherwise.
        """
        self.args = args
        try:
            self.client = connect(
                paths.socket_path(args.socket),
                autostart=start and not args.no_autostart,
                daemon_args=environment_flags(args.data_dir, args.policy),
            )
        except Unavailable as exc:
            if isinstance(exc, NotRunning) and not start:
                raise
            print(f"hikmah: {exc}", file=sys.stderr)
            json_error(args, "unavailable", str(exc))
            raise Exit(UNAVAILABLE) from None
        self.client.sock.settimeout(timeout)

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.client.close()

    def call(self, method: str, params: dict[str, Any]) -> Any:
        """One request; its reply (:func:`~hikmah_cli.replies.as_reply`: objects read as
        attributes too); a failure is printed and raised as Exit."""
        return self.result(self.send(method, params))

    def send(
        self, method: str, params: dict[str, Any] | None = None, *, encoded: str | None = None
    ) -> int:
        """Send one request without waiting (``encoded``: its params as JSON text already);
        its id, for :meth:`result`. A failure is printed and raised as Exit."""
        with self._failures():
            return self.client.send(method, params, encoded=encoded)

    def result(self, request_id: int) -> Any:
        """The reply to the request :meth:`send` sent as ``request_id``, as :meth:`call`
        returns it; a failure is printed and raised as Exit."""
        with self._failures():
            return as_reply(self.client.result(request_id))

    @contextlib.contextmanager
    def _failures(self) -> Iterator[None]:
        """Print a failure on stderr (and stdout with ``--json``) and raise it as Exit."""
        try:
            yield
        except Unavailable as exc:
            print(f"hikmah: {exc}", file=sys.stderr)
            json_error(self.args, "unavailable", str(exc))
            raise Exit(UNAVAILABLE) from None
        except RemoteError as exc:
            from hikmah.model.errors import REASONS  # noqa: PLC0415 -- only a failure needs it

            print(visible(f"hikmah {self.args.command}: {exc}"), file=sys.stderr)
            json_error(self.args, exc.reason or "internal", str(exc), exc.code)
            category = REASONS.get(exc.reason or "")
            if category in EXIT_FOR_CATEGORY:
                raise Exit(EXIT_FOR_CATEGORY[category]) from None
            raise Exit(USAGE if exc.code in (-32600, -32602) else INTERNAL) from None
