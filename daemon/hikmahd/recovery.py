"""``hikmahd --reset-passphrase``: the way back for a person who forgot the passphrase.

No proof can come from a forgotten passphrase, so the way back is the
daemon's own file access, taken with the daemon stopped, from a terminal, and
written down: a ``reset`` presence record in the ledger, which ``hikmah
status`` announces until a new passphrase is set. Anyone with the person's
files could do the same (an agent too); the record is what makes it seen
(docs/security.md, "A forgotten passphrase").
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from hikmah.model.errors import ConflictError, HikmahError, InvalidInput
from hikmah.model.policy import KernelPolicy
from hikmah.rules.operations import SetPresence, Written
from hikmah.store import maintenance
from hikmah.store.core import Store
from hikmah.vault.sealing import Keys

CONFIRMATION = "reset"


def reset_passphrase(
    data_dir: Path, now_ms: int, *, vault: Callable[[str], Keys] | None = None
) -> str:
    """Turn person presence off with a ``reset`` record, once the person at the
    controlling terminal typed :data:`CONFIRMATION`; what was done, in a sentence.

    Raises:
        InvalidInput: no terminal, or the person did not confirm.
        ConflictError: presence is off already.
        HikmahError: the ledger refused the record.
    """
    with Store(data_dir, vault=vault) as store:
        state = store.presence
        if not state.on:
            raise ConflictError(f"person presence is off already in {data_dir}: nothing to reset")
        report = maintenance.verify(store)
        lines = [
            f"This turns person presence off in {data_dir}: person-only actions will need no"
            " passphrase until you set a new one (hikmah passphrase set).",
            "A 'reset' record goes into the ledger, and hikmah status announces it.",
        ]
        if state.damaged:
            lines.append(f"Presence is locked now: {state.damaged}.")
        if not report.ok:
            lines.append("The ledger does not verify; its head is reset to its last record:")
            lines += [f"  {error}" for error in report.errors]
        _confirm("\n".join(lines) + f"\nType {CONFIRMATION} to go on: ")
        if not report.ok:
            maintenance.reset_head(store)
        (outcome,) = store.apply(
            [SetPresence(action="reset")], now_ms=now_ms, policy=KernelPolicy()
        )
        if isinstance(outcome, HikmahError):
            raise outcome
        assert isinstance(outcome, Written)  # a presence record, not another device's
        return f"person presence is off (reset, ledger record {outcome.seq})"


def _confirm(question: str) -> None:
    """Ask on the controlling terminal (never standard input) and check the answer."""
    try:
        fd = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY)
    except OSError:
        raise InvalidInput(
            "run hikmahd --reset-passphrase in a terminal: it asks you to confirm there"
        ) from None
    with open(fd, "r+b", buffering=0) as tty:
        tty.write(question.encode())
        answer = tty.readline().decode("utf-8", "replace").strip()
    if answer != CONFIRMATION:
        raise InvalidInput("not confirmed: nothing was changed")
