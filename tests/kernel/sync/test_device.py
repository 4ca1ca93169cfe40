"""Device ids, signing keys and the signed-file format."""

from __future__ import annotations

import pytest

from hikmah.model.device_id import is_device_id
from hikmah.model.errors import LedgerError
from hikmah.sync.device import DeviceKey, PublicKey, Untrusted, device_id
from hikmah.sync.signed import check_signed, signed_file, split_signed


def test_the_id_derives_from_the_public_key_and_is_a_safe_name() -> None:
    key = DeviceKey.generate()
    assert key.device_id == device_id(key.public.raw) == key.public.device_id
    assert is_device_id(key.device_id) and len(key.device_id) == 28
    assert DeviceKey.generate().device_id != key.device_id
    assert not is_device_id("../" + key.device_id[3:]) and not is_device_id(key.device_id.upper())


def test_a_private_key_survives_its_bytes_and_never_shows_in_repr() -> None:
    key = DeviceKey.generate()
    again = DeviceKey.from_bytes(key.to_bytes())
    assert again.device_id == key.device_id
    assert key.to_bytes().hex() not in repr(key)
    with pytest.raises(LedgerError, match="32 bytes"):
        DeviceKey.from_bytes(b"short")


def test_signatures_verify_only_for_their_key_and_bytes() -> None:
    key, other = DeviceKey.generate(), DeviceKey.generate()
    signature = key.sign(b"body")
    assert key.public.verifies(signature, b"body")
    assert not key.public.verifies(signature, b"bodz")
    assert not other.public.verifies(signature, b"body")
    assert not key.public.verifies(signature[:-1], b"body")
    with pytest.raises(Untrusted):
        PublicKey(b"x" * 31)


def test_a_signed_file_is_refused_when_any_byte_changes() -> None:
    key = DeviceKey.generate()
    data = signed_file(key, b'{"a":1}')
    body, signature = split_signed(data, "file")
    check_signed(key.public, body, signature, "file")
    for at in range(len(data)):
        for replacement in (data[at] ^ 1, ord("\n"), ord("A")):
            if replacement == data[at]:
                continue
            tampered = data[:at] + bytes([replacement]) + data[at + 1 :]
            with pytest.raises(Untrusted):
                body, signature = split_signed(tampered, "file")
                check_signed(key.public, body, signature, "file")
    with pytest.raises(ValueError, match="one line"):
        signed_file(key, b"two\nlines")
