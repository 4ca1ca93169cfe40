"""``sync.*``: pairing devices and exchanging records through a folder.

A :class:`Finding` is the sync planner's own (:mod:`hikmah.sync.plan`): it builds them
and the daemon answers with them as they are.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from hikmah.model.device_id import is_device_id
from hikmah.model.errors import InvalidInput
from hikmah.model.head import Head
from hikmah.model.wire.base import NoParams, Params, Result, Signature

# What is wrong with a device, or awaited of it; refused and fork halt it.
Problem = Literal["refused", "fork", "rolled_back", "waiting", "unpaired", "halted"]

# --- the objects of the replies ------------------------------------------------------


class Finding(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Something ``sync status`` reports; ``refused`` and ``fork`` halt the device."""

    device: str
    problem: Problem
    why: str


class Device(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """This device, or a paired one, as ``sync status`` lists it. This device alone has
    ``acknowledged_by``; a paired one alone ``applied``, ``pending``, ``acknowledges``,
    ``removed_at`` and ``halted``. What an entry does not have is UNSET, so left out
    (None cannot say so: some of them are null where they are there)."""

    id: str
    name: str
    this: bool  # this device
    epoch: int | None  # its chain's epoch (a compaction starts one); None: no manifest yet
    head: Head | None  # its chain's head; None: none yet
    # This device's head as each paired device has applied it, by device id.
    acknowledged_by: dict[str, int] | msgspec.UnsetType = msgspec.UNSET
    applied: int | msgspec.UnsetType = msgspec.UNSET  # how far its chain is applied here
    pending: int | msgspec.UnsetType = msgspec.UNSET  # of its records, not applied yet
    # How far it has applied this device's chain; None: not known yet.
    acknowledges: int | msgspec.UnsetType | None = msgspec.UNSET
    vault: bool | None  # it runs with the vault; None: not known yet
    # It was removed: nothing of its chain past this seq is applied.
    removed_at: int | msgspec.UnsetType | None = msgspec.UNSET
    # Why its records stopped being applied, until a person looks.
    halted: str | msgspec.UnsetType | None = msgspec.UNSET


# --- the methods ---------------------------------------------------------------------


class ExchangeResult(Result, frozen=True, kw_only=True):
    """What one exchange did."""

    device: str  # this device
    applied: dict[str, int]  # records applied, by device id
    paired: list[str]  # devices that joined with an invitation of this device
    taken_back: int  # records this device had published and its ledger lacked
    published: bool  # this device's chain was written to the folder
    findings: list[Finding]


class InviteResult(Result, frozen=True, kw_only=True):
    code: str  # the one-time pairing code
    expires_at: int  # epoch ms


class JoinParams(Params, frozen=True):
    code: Annotated[str, msgspec.Meta(min_length=1, max_length=200)]  # the pairing code


class JoinResult(Result, frozen=True, kw_only=True):
    device: str  # the device paired with
    name: str  # its name


class RemoveParams(Params, frozen=True):
    device: str  # its id
    delete: bool = False  # delete its directory from the folder too

    def check(self) -> None:
        if not is_device_id(self.device):
            raise InvalidInput(
                f"{self.device!r} is not a device id (hikmah sync status lists them)"
            )


class RemoveResult(Result, frozen=True, kw_only=True):
    device: str
    removed: bool  # always true
    deleted: bool  # its directory was deleted from the folder


class SyncStatusParams(Params, frozen=True):
    verify: bool = False  # check every chain published in the folder


class SyncStatusResult(Result, frozen=True, kw_only=True):
    """The devices, their heads, what is pending, what was refused. With sync off, only
    ``enabled``, ``folder``, ``devices`` and ``findings`` are there: the others are UNSET,
    so left out (None cannot say so: some of them are null where they are there)."""

    enabled: bool  # [sync] folder is set
    folder: str | None
    device: str | msgspec.UnsetType = msgspec.UNSET  # this device's id
    vault: bool | msgspec.UnsetType = msgspec.UNSET  # this device runs with the vault
    devices: list[Device]  # this device first, then the paired ones by id
    # This device's head in the folder, when its ledger is behind it.
    ahead: Head | msgspec.UnsetType | None = msgspec.UNSET
    # The device that removed this one: it no longer syncs.
    removed_by: str | msgspec.UnsetType | None = msgspec.UNSET
    # Sealed traces of other devices this device cannot read (it runs without the vault).
    sealed_unreadable: int | msgspec.UnsetType = msgspec.UNSET
    last_exchange_ms: int | msgspec.UnsetType | None = msgspec.UNSET
    error: str | msgspec.UnsetType | None = msgspec.UNSET  # why the last exchange failed
    findings: list[Finding]


METHODS = {
    "sync.exchange": Signature(NoParams, ExchangeResult),
    "sync.invite": Signature(NoParams, InviteResult),
    "sync.join": Signature(JoinParams, JoinResult),
    "sync.remove": Signature(RemoveParams, RemoveResult),
    "sync.status": Signature(SyncStatusParams, SyncStatusResult),
}
