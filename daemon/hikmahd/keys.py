"""The vault's long-lived keys in the OS keyring (service ``hikmah``).

One person may run several data directories; each has an id ``D`` (letters,
digits, ``.``, ``_``, ``-``) and these entries::

    index:D            the index key (base64): created once, never rotated here
    master:D:<key id>  one master key (base64) per live master
    master:D           the pointer, not a secret: {"current": <key id>, "retiring": [<key id>…]}

Masters live under their :func:`hikmah.vault.crypto.key_id`, so an entry is never
overwritten and every wrapped data key, which the store keeps with the key id
of the master that wrapped it, names the entry that opens it. The pointer is
the commit point of every change: a secret is written (and read back) before
the pointer names it, and leaves the pointer before it is deleted.

**Rotation** is two calls around the store's own work, so that a crash at
any point leaves every wrapped data key openable:

1. :meth:`Keyring.begin_rotation` stores a new master, then moves the pointer:
   the new one becomes current and the old one joins ``retiring``. New traces
   are wrapped under the new master from then on.
2. The store re-wraps every data key whose key id is a retiring one
   (:func:`hikmah.vault.crypto.rewrap`) and commits.
3. :meth:`Keyring.finish_rotation` takes the old id out of the pointer, then
   deletes its entry.

A crash before the pointer moves in step 1 leaves an unreferenced new master
entry (harmless: it wrapped nothing) and the old state. A crash after it, or
during 2, leaves the old master in ``retiring``: :meth:`Keyring.load_or_create`
returns it in :attr:`VaultKeys.retiring`, and the store resumes step 2 and
calls step 3 (nothing is lost as long as ``retiring`` is not empty). A crash
in step 3 between the two writes leaves an unreferenced old entry that the
next ``finish_rotation`` with the same id deletes. The index key is separate
from the masters (see :mod:`hikmah.vault.crypto`), so rotation never touches the index.

**Backends.** Keys go only to an OS keyring (Secret Service, KWallet, macOS
Keychain, Windows Credential Locker) unless the person names another backend
in ``PYTHON_KEYRING_BACKEND``: the vault never falls back to a plaintext
file silently. :meth:`Keyring.check_backend` says which backend is in use and
refuses the failing and null backends, a chainer with nothing to chain, and
any other backend nobody chose by name.

Every call here blocks (D-Bus, files): the daemon runs them in a worker thread
(``trio.to_thread.run_sync``). Only the process that owns the data directory
should call them. Nothing here logs, prints or puts a key in a message.
"""

from __future__ import annotations

import base64
import binascii
import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

import keyring
import msgspec
from keyring.backend import KeyringBackend
from keyring.backends import chainer, fail, null
from keyring.errors import PasswordDeleteError

from hikmah.vault.crypto import (
    KEY_BYTES,
    IndexKey,
    MasterKey,
    VaultError,
    VaultLocked,
    key_id,
    new_index_key,
    new_master_key,
)

log = logging.getLogger(__name__)

SERVICE: Final = "hikmah"
BACKEND_ENV: Final = "PYTHON_KEYRING_BACKEND"

# Trusted without being named: the keyrings of the desktop operating systems.
OS_KEYRINGS: Final = frozenset(
    {
        "keyring.backends.SecretService.Keyring",
        "keyring.backends.libsecret.Keyring",
        "keyring.backends.kwallet.DBusKeyring",
        "keyring.backends.kwallet.DBusKeyringKWallet4",
        "keyring.backends.macOS.Keyring",
        "keyring.backends.Windows.WinVaultKeyring",
    }
)

HOW_TO_FIX: Final = (
    "Run a Secret Service (GNOME Keyring, KeePassXC or KWallet) in the session of hikmahd; "
    'headless, start one on a private bus: dbus-run-session -- sh -c \'printf %s "$PASSWORD" '
    "| gnome-keyring-daemon --unlock --components=secrets; exec hikmahd'. "
    "Or choose a file backend explicitly: install keyrings.alt and set "
    "PYTHON_KEYRING_BACKEND=keyrings.alt.file.PlaintextKeyring in hikmahd's environment "
    "(the keys are then kept unencrypted in a file in your home: use it only on an encrypted disk)."
)

_DATA_DIR_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_KEY_ID = re.compile(r"[0-9a-f]{16}")


@dataclass(frozen=True, eq=False, repr=False)
class VaultKeys:
    """The long-lived keys of one data directory, as the keyring holds them.

    Attributes:
        data_dir_id: which data directory these belong to.
        master: the current master key: wrap new data keys under it.
        master_id: its key id, stored with every key it wraps.
        index: the key of blind index terms.
        index_id: its key id; the store pins it and rebuilds its blind index
            when it changes (otherwise every lookup would silently miss).
        retiring: masters of an unfinished rotation, by key id; the store
            re-wraps their data keys, then calls
            :meth:`Keyring.finish_rotation` for each.
        missing: retiring key ids whose entry is gone from the keyring; data
            keys still wrapped under them cannot be opened.
    """

    data_dir_id: str
    master: MasterKey
    master_id: str
    index: IndexKey
    index_id: str
    retiring: Mapping[str, MasterKey]
    missing: tuple[str, ...] = ()

    def master_for(self, wrapped_by: str) -> MasterKey:
        """The master whose key id a stored wrapped key names.

        Raises:
            VaultLocked: the keyring holds no master with that id.
        """
        if wrapped_by == self.master_id:
            return self.master
        try:
            return self.retiring[wrapped_by]
        except KeyError:
            raise VaultLocked(
                f"no master key {wrapped_by} for data directory {self.data_dir_id} in the "
                f"keyring (entry {SERVICE}/{_master_user(self.data_dir_id, wrapped_by)}); "
                "restore it from a backup of your keyring"
            ) from None

    def __repr__(self) -> str:
        return (
            f"VaultKeys(data_dir_id={self.data_dir_id!r}, master_id={self.master_id!r}, "
            f"index_id={self.index_id!r}, retiring={sorted(self.retiring)!r}, "
            f"missing={list(self.missing)!r})"
        )


class _Pointer(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    current: str
    retiring: tuple[str, ...] = ()


class Keyring:
    """The vault keys of one data directory in the OS keyring.

    Args:
        data_dir_id: distinguishes the data directories of one user.
        backend: the keyring backend; by default the one ``keyring`` selects
            (``PYTHON_KEYRING_BACKEND``, then its config file, then the best
            available).
    """

    def __init__(self, data_dir_id: str, *, backend: KeyringBackend | None = None) -> None:
        if not _DATA_DIR_ID.fullmatch(data_dir_id):
            raise VaultError(
                f"a data directory id must be 1 to 64 letters, digits, '.', '_' or '-' "
                f"(starting with a letter or digit), got {data_dir_id!r}"
            )
        self.data_dir_id = data_dir_id
        self._backend = _default_backend() if backend is None else backend

    def check_backend(self) -> str:
        """The name of the backend the keys are written to, if Hikmah may use it.

        Raises:
            VaultError: the backend fails or forgets everything, a chainer has
                nothing to chain, or it is not an OS keyring and
                ``PYTHON_KEYRING_BACKEND`` does not name it; the message
                names the backend and says how to fix it.
        """
        active = self._backend
        target = active
        if isinstance(active, chainer.ChainerBackend):
            chained = list(active.backends)
            if not chained:
                raise VaultError(
                    f"keyring's chainer backend ({_name(active)}) has no viable backend to "
                    f"chain, so the vault's keys could not be kept. {HOW_TO_FIX}"
                )
            # The chainer writes to the first backend of its list.
            target = chained[0]
        name = _name(target)
        if isinstance(target, fail.Keyring):
            raise VaultError(
                f"no usable keyring backend: the active one is {name}, which refuses every "
                f"operation, so the vault's keys cannot be kept. {HOW_TO_FIX}"
            )
        if isinstance(target, null.Keyring):
            raise VaultError(
                f"the active keyring backend is {name}, which stores nothing: the vault's keys "
                f"would be lost and every encrypted trace with them. {HOW_TO_FIX}"
            )
        named = os.environ.get(BACKEND_ENV)
        if name not in OS_KEYRINGS and named != name:
            said = f"it names {named}" if named else "it is not set"
            raise VaultError(
                f"the keyring backend {name} is not an OS keyring, and the vault uses another "
                f"backend only when {BACKEND_ENV} names it ({said}). If you mean to keep the "
                f"vault's keys there, set {BACKEND_ENV}={name} in hikmahd's environment. "
                f"{HOW_TO_FIX}"
            )
        return name if target is active else f"{_name(active)} -> {name}"

    def load_or_create(self) -> VaultKeys:
        """The data directory's keys, created in the keyring on first use.

        A missing index key is created even when masters exist (the store
        notices the new :attr:`VaultKeys.index_id` and rebuilds its index).

        Raises:
            VaultError: the backend is refused (:meth:`check_backend`) or an
                entry is not what Hikmah wrote.
            VaultLocked: the keyring cannot be reached or is locked, or the
                current master's entry is gone.
        """
        self.check_backend()
        pointer = self._read_pointer()
        index = self._read_key(self._index_user)
        if index is None:
            if pointer is not None:
                log.warning(
                    "the keyring has no index key for data directory %s (entry %s/%s); "
                    "creating a new one, the blind index must be rebuilt",
                    self.data_dir_id,
                    SERVICE,
                    self._index_user,
                )
            index = new_index_key()
            self._write_key(self._index_user, index)
        if pointer is None:
            master = new_master_key()
            self._write_key(self._master_user(key_id(master)), master)
            pointer = _Pointer(current=key_id(master))
            self._write_pointer(pointer)
            log.info(
                "created vault keys for data directory %s (master %s, index %s)",
                self.data_dir_id,
                pointer.current,
                key_id(IndexKey(index)),
            )
        return self._keys(pointer, IndexKey(index))

    def begin_rotation(self) -> VaultKeys:
        """Store a new master and make it current; the old one starts retiring.

        Returns:
            The keys after the switch: the store wraps new data keys under
            :attr:`VaultKeys.master` and re-wraps those under each
            :attr:`VaultKeys.retiring` master, then calls
            :meth:`finish_rotation`.

        Raises:
            VaultError: no keys exist yet for this data directory, or the
                backend is refused.
            VaultLocked: the keyring cannot be reached, or the current master
                cannot be read (it is never retired then).
        """
        self.check_backend()
        pointer = self._read_pointer()
        if pointer is None:
            raise VaultError(
                f"data directory {self.data_dir_id} has no vault keys yet: nothing to rotate"
            )
        self._read_master(pointer.current)
        master = new_master_key()
        new_id = key_id(master)
        self._write_key(self._master_user(new_id), master)
        retiring = (pointer.current, *(r for r in pointer.retiring if r != pointer.current))
        self._write_pointer(_Pointer(current=new_id, retiring=retiring))
        log.info(
            "vault rotation begun for data directory %s: master %s is current, %s retiring",
            self.data_dir_id,
            new_id,
            ", ".join(retiring),
        )
        return self.load_or_create()

    def finish_rotation(self, old_key_id: str) -> None:
        """Forget a retired master once no stored data key is wrapped under it.

        Call it only after the store has committed the re-wrapping of every
        data key whose key id is ``old_key_id``. Calling it again, or after a
        crash inside it, is safe.

        Raises:
            VaultError: ``old_key_id`` is malformed or is the current master,
                or the backend is refused.
            VaultLocked: the keyring cannot be reached.
        """
        if not _KEY_ID.fullmatch(old_key_id):
            raise VaultError(f"a key id is 16 lowercase hex digits, got {old_key_id!r}")
        self.check_backend()
        pointer = self._read_pointer()
        if pointer is None:
            # Without the pointer nothing says which masters are still needed.
            raise VaultError(
                f"data directory {self.data_dir_id} has no key pointer in the keyring "
                f"({SERVICE}/{self._pointer_user}); no master was deleted"
            )
        if old_key_id == pointer.current:
            raise VaultError(
                f"master key {old_key_id} is the current one of data directory "
                f"{self.data_dir_id}; only a retiring master can be finished"
            )
        if old_key_id in pointer.retiring:
            retiring = tuple(r for r in pointer.retiring if r != old_key_id)
            self._write_pointer(_Pointer(current=pointer.current, retiring=retiring))
        # Not (or no longer) named by the pointer: an entry left by a crash
        # after the pointer moved, which nothing can need.
        self._delete(self._master_user(old_key_id))
        log.info(
            "vault rotation finished for data directory %s: master %s deleted",
            self.data_dir_id,
            old_key_id,
        )

    def read_entry(self, kind: str) -> str | None:
        """Another secret of this data directory (``<kind>:<data dir id>``), such as the
        sync device key; None when it has none.

        Raises:
            VaultError, VaultLocked: as for the vault's own keys.
        """
        self.check_backend()
        return self._get(f"{kind}:{self.data_dir_id}")

    def write_entry(self, kind: str, value: str) -> None:
        """Keep another secret of this data directory, read back before it is relied on."""
        self.check_backend()
        user = f"{kind}:{self.data_dir_id}"
        self._set(user, value)
        if self._get(user) != value:
            raise VaultLocked(
                f"the keyring ({_name(self._backend)}) accepted {SERVICE}/{user} but does not"
                " return it. Check that the keyring is unlocked and writable."
            )

    # -- entries -------------------------------------------------------------

    @property
    def _index_user(self) -> str:
        return f"index:{self.data_dir_id}"

    @property
    def _pointer_user(self) -> str:
        return f"master:{self.data_dir_id}"

    def _master_user(self, master_id: str) -> str:
        return _master_user(self.data_dir_id, master_id)

    def _keys(self, pointer: _Pointer, index: IndexKey) -> VaultKeys:
        retiring: dict[str, MasterKey] = {}
        missing: list[str] = []
        for old in pointer.retiring:
            found = self._read_key(self._master_user(old))
            if found is None:
                missing.append(old)
                log.warning(
                    "retiring master %s of data directory %s is gone from the keyring; data "
                    "keys still wrapped under it cannot be opened",
                    old,
                    self.data_dir_id,
                )
            else:
                retiring[old] = self._checked_master(old, found)
        return VaultKeys(
            data_dir_id=self.data_dir_id,
            master=self._read_master(pointer.current),
            master_id=pointer.current,
            index=index,
            index_id=key_id(index),
            retiring=retiring,
            missing=tuple(missing),
        )

    def _read_master(self, master_id: str) -> MasterKey:
        found = self._read_key(self._master_user(master_id))
        if found is None:
            raise VaultLocked(
                f"the keyring names master key {master_id} as current for data directory "
                f"{self.data_dir_id}, but its entry {SERVICE}/{self._master_user(master_id)} "
                "is gone; restore it from a backup of your keyring"
            )
        return self._checked_master(master_id, found)

    def _checked_master(self, master_id: str, key: bytes) -> MasterKey:
        master = MasterKey(key)
        if key_id(master) != master_id:
            raise VaultError(
                f"the keyring entry {SERVICE}/{self._master_user(master_id)} holds a key whose "
                f"id is {key_id(master)}: the entry was changed outside Hikmah"
            )
        return master

    def _read_pointer(self) -> _Pointer | None:
        text = self._get(self._pointer_user)
        if text is None:
            return None
        try:
            pointer = msgspec.json.decode(text, type=_Pointer)
        except msgspec.DecodeError:
            pointer = None
        if pointer is None or not all(
            _KEY_ID.fullmatch(i) for i in (pointer.current, *pointer.retiring)
        ):
            raise VaultError(
                f"the keyring entry {SERVICE}/{self._pointer_user} is not a Hikmah key pointer; "
                "it was changed outside Hikmah"
            )
        return pointer

    def _write_pointer(self, pointer: _Pointer) -> None:
        self._set(self._pointer_user, msgspec.json.encode(pointer).decode())

    def _read_key(self, username: str) -> bytes | None:
        text = self._get(username)
        if text is None:
            return None
        try:
            key = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            key = b""
        if len(key) != KEY_BYTES:
            raise VaultError(
                f"the keyring entry {SERVICE}/{username} is not a Hikmah key (base64 of "
                f"{KEY_BYTES} bytes); it was changed outside Hikmah"
            )
        return key

    def _write_key(self, username: str, key: bytes) -> None:
        text = base64.b64encode(key).decode("ascii")
        self._set(username, text)
        # A backend that accepts a write and keeps nothing would lose every
        # trace sealed afterwards: read it back before anything depends on it.
        if self._get(username) != text:
            raise VaultLocked(
                f"the keyring ({_name(self._backend)}) accepted {SERVICE}/{username} but does "
                "not return it; nothing depends on it yet. Check that the keyring is unlocked "
                "and writable."
            )

    # -- the backend ---------------------------------------------------------

    def _get(self, username: str) -> str | None:
        try:
            return self._backend.get_password(SERVICE, username)
        except Exception as exc:  # any backend failure means the keys are out of reach
            raise self._unreachable("read", username, exc) from exc

    def _set(self, username: str, value: str) -> None:
        try:
            self._backend.set_password(SERVICE, username, value)
        except Exception as exc:
            raise self._unreachable("write", username, exc) from exc

    def _delete(self, username: str) -> None:
        try:
            self._backend.delete_password(SERVICE, username)
        except PasswordDeleteError:
            pass  # already gone: deleting is idempotent here
        except Exception as exc:
            raise self._unreachable("delete", username, exc) from exc

    def _unreachable(self, verb: str, username: str, exc: Exception) -> VaultLocked:
        return VaultLocked(
            f"the keyring ({_name(self._backend)}) could not {verb} {SERVICE}/{username}: "
            f"{type(exc).__name__}: {exc}. Unlock the keyring, or start its service, and try "
            "again."
        )


def _default_backend() -> KeyringBackend:
    try:
        return keyring.get_keyring()
    except Exception as exc:  # a backend named in the environment or config that cannot load
        raise VaultError(
            f"keyring could not load its backend ({BACKEND_ENV}="
            f"{os.environ.get(BACKEND_ENV, '(not set)')}, or its config file "
            f"keyringrc.cfg): {type(exc).__name__}: {exc}. Install that backend or choose "
            f"another. {HOW_TO_FIX}"
        ) from exc


def _master_user(data_dir_id: str, master_id: str) -> str:
    return f"master:{data_dir_id}:{master_id}"


def _name(backend: KeyringBackend) -> str:
    cls = type(backend)
    return f"{cls.__module__}.{cls.__qualname__}"
