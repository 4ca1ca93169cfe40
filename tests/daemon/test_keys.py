"""The vault's keys in a real keyring.

Backend: the real Secret Service, GNOME Keyring's ``gnome-keyring-daemon
--components=secrets``, on a private D-Bus session bus started per test, with
its keyring files in the test's temp dir and unlocked by a password on its
stdin. That is the backend ``keyring`` picks on a Linux desktop, so the tests
exercise the same D-Bus calls, the same item attributes and the same locked or
missing-service failures as a person's session, with nothing touching the
user's own keyring. (keyrings.alt's file backend would also work headless, but
it is the backend the vault refuses unless named explicitly, not the one it is
meant for.) Both daemons are killed and reaped by the fixture.

The refusal tests need no bus: they check which backend objects
:meth:`Keyring.check_backend` accepts.
"""

from __future__ import annotations

import base64
import gc
import re

import keyring.backend
import keyring.core
import msgspec
import pytest
from keyring.backend import KeyringBackend
from keyring.backends import SecretService, chainer, fail, null

from hikmah.vault import crypto
from hikmah.vault.crypto import VaultError, VaultLocked
from hikmahd.keys import SERVICE, Keyring, VaultKeys
from tests.harness.secret_service import SecretServiceSession, needs_secret_service


def real(data_dir_id: str = "data1") -> Keyring:
    """A Keyring on the Secret Service, as a fresh daemon process would open it."""
    return Keyring(data_dir_id, backend=SecretService.Keyring())


def raw(username: str) -> str | None:
    return SecretService.Keyring().get_password(SERVICE, username)


def same_keys(a: VaultKeys, b: VaultKeys) -> bool:
    return (a.master, a.master_id, a.index, a.index_id, dict(a.retiring), a.missing) == (
        b.master,
        b.master_id,
        b.index,
        b.index_id,
        dict(b.retiring),
        b.missing,
    )


# -- on the real Secret Service -----------------------------------------------


@needs_secret_service
def test_first_use_creates_the_keys_and_a_second_keyring_object_finds_them(
    secret_service: SecretServiceSession,
) -> None:
    assert raw("master:data1") is None
    first = real()
    assert first.check_backend() == "keyring.backends.SecretService.Keyring"
    keys = first.load_or_create()
    assert len(keys.master) == len(keys.index) == crypto.KEY_BYTES
    assert keys.master != keys.index
    assert keys.master_id == crypto.key_id(keys.master)
    assert keys.index_id == crypto.key_id(keys.index)
    assert dict(keys.retiring) == {} and keys.missing == ()

    # The entries, as another keyring client sees them.
    pointer = msgspec.json.decode(raw("master:data1") or "")
    assert pointer == {"current": keys.master_id, "retiring": []}
    assert base64.b64decode(raw(f"master:data1:{keys.master_id}") or "") == keys.master
    assert base64.b64decode(raw("index:data1") or "") == keys.index

    again = real().load_or_create()
    assert same_keys(again, keys)
    other = real("data2").load_or_create()
    assert other.master != keys.master and other.index != keys.index


@needs_secret_service
def test_without_configuration_keyring_chooses_the_secret_service(
    secret_service: SecretServiceSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What hikmahd gets with no backend argument: keyring's own choice."""
    monkeypatch.delenv("PYTHON_KEYRING_BACKEND", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(secret_service.home / "config"))  # no keyringrc.cfg
    monkeypatch.setattr(keyring.core, "_keyring_backend", None)
    # keyring lists the viable backends once per process (jaraco's @once keeps
    # it in "saved_result"): list them again on this bus, and again after.
    forget = lambda: vars(keyring.backend.get_all_keyring).pop("saved_result", None)  # noqa: E731
    forget()
    try:
        chosen = Keyring("data1")
        assert chosen.check_backend().endswith("keyring.backends.SecretService.Keyring")
        assert same_keys(chosen.load_or_create(), real().load_or_create())
    finally:
        forget()


@needs_secret_service
def test_the_keys_persist_across_a_restart_of_the_keyring_and_not_in_plaintext(
    secret_service: SecretServiceSession,
) -> None:
    keys = real().load_or_create()
    secret_service.stop_keyring()
    secret_service.start_keyring()
    assert same_keys(real().load_or_create(), keys)
    stored = b"".join(p.read_bytes() for p in secret_service.home.rglob("*") if p.is_file())
    assert stored  # GNOME Keyring wrote its (encrypted) keyring file in our temp home
    for secret in (keys.master, keys.index):
        assert secret not in stored
        assert base64.b64encode(secret) not in stored


@needs_secret_service
def test_repr_shows_key_ids_and_never_keys(secret_service: SecretServiceSession) -> None:
    store_keys = real()
    store_keys.load_or_create()
    keys = store_keys.begin_rotation()
    text = repr(keys) + str(keys)
    assert keys.master_id in text
    for secret in (keys.master, keys.index, *keys.retiring.values()):
        assert secret.hex() not in text
        assert base64.b64encode(secret).decode() not in text
        assert repr(secret) not in text


@needs_secret_service
def test_rotation_interrupted_between_begin_and_finish_keeps_both_masters(
    secret_service: SecretServiceSession,
) -> None:
    before = real().load_or_create()
    data_key = crypto.new_data_key()
    stored_by, stored = before.master_id, crypto.wrap(before.master, data_key)

    during = real().begin_rotation()
    assert during.master_id != before.master_id
    assert during.index == before.index  # rotation never touches the index key
    assert dict(during.retiring) == {before.master_id: before.master}
    # ... and the process dies here. A fresh process finds both masters:
    after_crash = real().load_or_create()
    assert same_keys(after_crash, during)
    assert after_crash.master_for(before.master_id) == before.master
    assert crypto.unwrap(after_crash.master_for(stored_by), stored) == data_key

    # It resumes: re-wraps what the old master wrapped, then finishes.
    for old_id in after_crash.retiring:
        stored = crypto.rewrap(after_crash.master_for(old_id), after_crash.master, stored)
        stored_by = after_crash.master_id
        real().finish_rotation(old_id)
    done = real().load_or_create()
    assert done.master_id == during.master_id and dict(done.retiring) == {}
    assert raw(f"master:data1:{before.master_id}") is None
    assert crypto.unwrap(done.master_for(stored_by), stored) == data_key
    with pytest.raises(VaultLocked, match=before.master_id):
        done.master_for(before.master_id)
    # Finishing again (a crash after deleting, before the caller noted it) is harmless.
    real().finish_rotation(before.master_id)
    with pytest.raises(VaultError, match="is the current one"):
        real().finish_rotation(done.master_id)
    with pytest.raises(VaultError, match="16 lowercase hex"):
        real().finish_rotation("not-a-key-id")


@needs_secret_service
def test_two_rotations_before_finishing_keep_every_old_master(
    secret_service: SecretServiceSession,
) -> None:
    first = real().load_or_create()
    second = real().begin_rotation()
    third = real().begin_rotation()
    assert list(third.retiring) == [second.master_id, first.master_id]
    real().finish_rotation(first.master_id)
    assert list(real().load_or_create().retiring) == [second.master_id]


class CrashOnPointer(KeyringBackend):
    """The Secret Service, except that the process dies when it would move the pointer."""

    priority = -1  # type: ignore[assignment]  # never picked by keyring itself

    def __init__(self) -> None:
        super().__init__()
        self.inner = SecretService.Keyring()

    def get_password(self, service: str, username: str) -> str | None:
        return self.inner.get_password(service, username)

    def set_password(self, service: str, username: str, password: str) -> None:
        if username.count(":") == 1 and username.startswith("master:"):
            raise SystemExit("killed while writing the pointer")
        self.inner.set_password(service, username, password)

    def delete_password(self, service: str, username: str) -> None:
        self.inner.delete_password(service, username)


@needs_secret_service
def test_a_crash_before_the_pointer_moves_leaves_the_old_master_current(
    secret_service: SecretServiceSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = real().load_or_create()
    crashing = Keyring("data1", backend=CrashOnPointer())
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", f"{__name__}.CrashOnPointer")
    with pytest.raises(SystemExit):
        crashing.begin_rotation()
    assert same_keys(real().load_or_create(), before)


@needs_secret_service
def test_a_missing_index_key_is_recreated_and_shows_as_a_new_index_id(
    secret_service: SecretServiceSession,
) -> None:
    before = real().load_or_create()
    SecretService.Keyring().delete_password(SERVICE, "index:data1")
    after = real().load_or_create()
    assert after.master == before.master
    assert after.index_id != before.index_id  # the store rebuilds its blind index


@needs_secret_service
def test_entries_changed_outside_hikmah_are_refused(secret_service: SecretServiceSession) -> None:
    keys = real().load_or_create()
    backend = SecretService.Keyring()
    backend.set_password(
        SERVICE, f"master:data1:{keys.master_id}", base64.b64encode(bytes(32)).decode()
    )
    with pytest.raises(VaultError, match="changed outside Hikmah"):
        real().load_or_create()
    backend.set_password(SERVICE, f"master:data1:{keys.master_id}", "not base64!")
    with pytest.raises(VaultError, match="not a Hikmah key"):
        real().load_or_create()
    backend.delete_password(SERVICE, f"master:data1:{keys.master_id}")
    with pytest.raises(VaultLocked, match="restore it from a backup"):
        real().load_or_create()
    backend.set_password(SERVICE, "master:data1", '{"current": "zz"}')
    with pytest.raises(VaultError, match="not a Hikmah key pointer"):
        real().load_or_create()


@needs_secret_service
# keyring's SecretService backend opens a D-Bus connection before it looks up
# the collection and does not close it when that fails (keyring 25.7): the
# socket is closed by the garbage collector, with a ResourceWarning. Collected
# here, so that the warning is this test's and not a later one's.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_keyring_that_went_away_is_reported_as_locked(
    secret_service: SecretServiceSession,
) -> None:
    store_keys = real()
    store_keys.load_or_create()
    secret_service.stop_keyring()
    with pytest.raises(
        VaultLocked, match=r"could not read hikmah/master:data1.*Unlock the keyring"
    ):
        store_keys.load_or_create()
    gc.collect()


# -- which backends are accepted ----------------------------------------------


class MemoryKeyring(KeyringBackend):
    """A backend that is not an OS keyring, like keyrings.alt's PlaintextKeyring."""

    priority = -1  # type: ignore[assignment]  # never picked by keyring itself

    def __init__(self) -> None:
        super().__init__()
        self.items: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.items.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.items[service, username] = password

    def delete_password(self, service: str, username: str) -> None:
        self.items.pop((service, username), None)


class Forgetful(MemoryKeyring):
    """Accepts every write and keeps nothing."""

    def set_password(self, service: str, username: str, password: str) -> None:
        pass


MEMORY = f"{__name__}.MemoryKeyring"


def test_the_fail_backend_is_refused_with_a_clear_message(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYTHON_KEYRING_BACKEND", raising=False)
    store_keys = Keyring("data1", backend=fail.Keyring())
    with pytest.raises(VaultError) as info:
        store_keys.check_backend()
    message = str(info.value)
    assert "keyring.backends.fail.Keyring" in message
    assert "refuses every operation" in message
    assert "gnome-keyring-daemon --unlock --components=secrets" in message
    assert "PYTHON_KEYRING_BACKEND=keyrings.alt.file.PlaintextKeyring" in message
    with pytest.raises(VaultError, match=r"fail\.Keyring"):
        store_keys.load_or_create()
    # Naming it explicitly does not help: it cannot keep anything.
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    with pytest.raises(VaultError, match="refuses every operation"):
        store_keys.check_backend()


def test_the_null_backend_is_refused() -> None:
    with pytest.raises(VaultError, match=r"null\.Keyring, which stores nothing"):
        Keyring("data1", backend=null.Keyring()).check_backend()


def test_a_chainer_with_nothing_to_chain_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(keyring.backend, "_limit", lambda backend: False)
    with pytest.raises(VaultError, match=r"chainer backend .* has no viable backend"):
        Keyring("data1", backend=chainer.ChainerBackend()).check_backend()


def test_a_chainer_is_judged_by_the_backend_it_writes_to(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYTHON_KEYRING_BACKEND", raising=False)
    monkeypatch.setattr(
        chainer.ChainerBackend, "backends", [SecretService.Keyring(), MemoryKeyring()]
    )
    assert Keyring("data1", backend=chainer.ChainerBackend()).check_backend() == (
        "keyring.backends.chainer.ChainerBackend -> keyring.backends.SecretService.Keyring"
    )
    # keyrings.alt installed, no Secret Service: the chainer would write to a
    # file without anyone having chosen it.
    monkeypatch.setattr(chainer.ChainerBackend, "backends", [MemoryKeyring()])
    with pytest.raises(VaultError, match=re.escape(f"{MEMORY} is not an OS keyring")):
        Keyring("data1", backend=chainer.ChainerBackend()).check_backend()


def test_a_non_os_backend_is_used_only_when_named_explicitly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    backend = MemoryKeyring()
    store_keys = Keyring("data1", backend=backend)

    monkeypatch.delenv("PYTHON_KEYRING_BACKEND", raising=False)
    with pytest.raises(VaultError) as info:
        store_keys.load_or_create()
    assert f"{MEMORY} is not an OS keyring" in str(info.value)
    assert "it is not set" in str(info.value)
    assert f"set PYTHON_KEYRING_BACKEND={MEMORY}" in str(info.value)
    assert backend.items == {}  # refused before anything was written

    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyrings.alt.file.PlaintextKeyring")
    with pytest.raises(VaultError, match=re.escape("it names keyrings.alt.file.PlaintextKeyring")):
        store_keys.check_backend()

    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", MEMORY)
    assert store_keys.check_backend() == MEMORY
    keys = store_keys.load_or_create()
    assert set(backend.items) == {
        (SERVICE, "index:data1"),
        (SERVICE, "master:data1"),
        (SERVICE, f"master:data1:{keys.master_id}"),
    }


def test_a_backend_that_keeps_nothing_is_caught_before_anything_depends_on_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", f"{__name__}.Forgetful")
    with pytest.raises(VaultLocked, match="accepted hikmah/index:data1 but does not return it"):
        Keyring("data1", backend=Forgetful()).load_or_create()


def test_a_named_backend_that_cannot_load_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyrings.nothere.file.PlaintextKeyring")
    monkeypatch.setattr(keyring.core, "_keyring_backend", None)
    with pytest.raises(VaultError) as info:
        Keyring("data1")
    message = str(info.value)
    assert "PYTHON_KEYRING_BACKEND=keyrings.nothere.file.PlaintextKeyring" in message
    assert "ModuleNotFoundError" in message


def test_finishing_without_a_pointer_deletes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", MEMORY)
    backend = MemoryKeyring()
    backend.set_password(SERVICE, "master:data1:0123456789abcdef", "kept")
    with pytest.raises(VaultError, match="no master was deleted"):
        Keyring("data1", backend=backend).finish_rotation("0123456789abcdef")
    assert backend.get_password(SERVICE, "master:data1:0123456789abcdef") == "kept"


@pytest.mark.parametrize("bad", ["", "a:b", "-x", "x" * 65, "data dir", "é"])
def test_a_malformed_data_dir_id_is_refused(bad: str) -> None:
    with pytest.raises(VaultError, match="data directory id"):
        Keyring(bad, backend=MemoryKeyring())
