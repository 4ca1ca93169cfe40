"""Tests of the vault's cryptography: sealing, key wrap, key ids and blind terms."""

from __future__ import annotations

import base64

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hikmah.model.errors import HikmahError
from hikmah.vault import crypto
from hikmah.vault.crypto import (
    SEALED_OVERHEAD,
    DataKey,
    DecryptionFailed,
    IndexKey,
    KeyDestroyed,
    MasterKey,
    PlainFields,
    SealedFields,
    VaultError,
    VaultLocked,
)

TRACE = "tr_018f2a3b4c5d0123456789"
OTHER_TRACE = "tr_018f2a3b4c5d9876543210"
AAD = b"tr_x\x00content"

FULL = PlainFields(
    content="the deploy key lives in the team vault, not in the repo",
    tags=("ops", "deploy", "naïve ☃"),
    claim_key="deploy.key.location",
    claim_value="team vault",
    locator="file:///home/me/notes/ops.md#L12",
)


def flip(data: bytes, index: int, delta: int = 1) -> bytes:
    changed = bytearray(data)
    changed[index] ^= delta
    return bytes(changed)


def assert_no_secret_in(message: str, *secrets: bytes) -> None:
    for secret in secrets:
        assert secret.hex() not in message
        assert base64.b64encode(secret).decode() not in message


# -- seal / open ---------------------------------------------------------------


def test_seal_round_trip_and_layout() -> None:
    key = crypto.new_data_key()
    sealed = crypto.seal(key, b"hello", aad=AAD)
    assert len(sealed) == len(b"hello") + SEALED_OVERHEAD == 5 + 1 + 12 + 16
    assert sealed[0] == crypto.SEALED_V1
    assert crypto.open_sealed(key, sealed, aad=AAD) == b"hello"
    assert crypto.open_sealed(key, crypto.seal(key, b"", aad=b""), aad=b"") == b""


def test_each_seal_uses_a_fresh_nonce() -> None:
    key = crypto.new_data_key()
    first, second = (crypto.seal(key, b"same text", aad=AAD) for _ in range(2))
    assert first[1:13] != second[1:13]
    assert first != second


def test_a_wrong_key_is_refused_without_echoing_key_or_plaintext() -> None:
    key, wrong = crypto.new_data_key(), crypto.new_data_key()
    sealed = crypto.seal(key, b"my plaintext diary", aad=AAD)
    with pytest.raises(DecryptionFailed) as info:
        crypto.open_sealed(wrong, sealed, aad=AAD)
    message = str(info.value)
    assert "key is wrong" in message
    assert "diary" not in message
    assert_no_secret_in(message, key, wrong)


def test_any_tampered_byte_is_refused() -> None:
    key = crypto.new_data_key()
    sealed = crypto.seal(key, b"pay 100 to alice", aad=AAD)
    for index in range(len(sealed)):
        with pytest.raises(DecryptionFailed):
            crypto.open_sealed(key, flip(sealed, index), aad=AAD)


@pytest.mark.parametrize("cut", [0, 1, 13, SEALED_OVERHEAD - 1, SEALED_OVERHEAD + 3])
def test_truncated_or_extended_bytes_are_refused(cut: int) -> None:
    key = crypto.new_data_key()
    sealed = crypto.seal(key, b"four", aad=AAD)
    with pytest.raises(DecryptionFailed):
        crypto.open_sealed(key, sealed[:cut], aad=AAD)
    with pytest.raises(DecryptionFailed):
        crypto.open_sealed(key, sealed + b"\x00", aad=AAD)


def test_a_different_aad_is_refused() -> None:
    key = crypto.new_data_key()
    sealed = crypto.seal(key, b"text", aad=AAD)
    with pytest.raises(DecryptionFailed, match="another trace or field"):
        crypto.open_sealed(key, sealed, aad=b"tr_y\x00content")


@pytest.mark.parametrize("length", [0, 16, 31, 33, 64])
def test_a_key_of_the_wrong_length_is_a_configuration_error(length: int) -> None:
    bad = DataKey(bytes(length))
    with pytest.raises(VaultError, match=f"32 bytes, got {length}") as info:
        crypto.seal(bad, b"x", aad=b"")
    assert not isinstance(info.value, DecryptionFailed)
    with pytest.raises(VaultError, match="32 bytes"):
        crypto.wrap(MasterKey(bytes(length)), crypto.new_data_key())
    with pytest.raises(VaultError, match="32 bytes"):
        crypto.blind(IndexKey(bytes(length)), "term")


def test_errors_are_hikmah_errors_with_stable_reasons() -> None:
    assert issubclass(VaultError, HikmahError)
    assert VaultError.reason == "policy"
    assert VaultLocked.reason == "policy"
    assert DecryptionFailed.reason == "ledger"
    assert KeyDestroyed.reason == "not_found"
    for cls in (VaultLocked, DecryptionFailed, KeyDestroyed):
        assert issubclass(cls, VaultError)


# -- fields --------------------------------------------------------------------


def test_fields_round_trip() -> None:
    key = crypto.new_data_key()
    sealed = crypto.seal_fields(key, TRACE, FULL)
    assert crypto.open_fields(key, TRACE, sealed) == FULL


def test_absent_fields_stay_absent_and_tags_are_always_sealed() -> None:
    key = crypto.new_data_key()
    plain = PlainFields(content="just content")
    sealed = crypto.seal_fields(key, TRACE, plain)
    assert sealed.claim_key is sealed.claim_value is sealed.locator is None
    assert sealed.tags  # an empty list is sealed too: the tag count is hidden
    assert crypto.open_fields(key, TRACE, sealed) == plain


def test_sealed_fields_are_unpadded_urlsafe_base64_and_encode_deterministically() -> None:
    key = crypto.new_data_key()
    sealed = crypto.seal_fields(key, TRACE, FULL)
    for name in crypto.SEALED_FIELDS:
        text = getattr(sealed, name)
        assert isinstance(text, str)
        assert "=" not in text and "+" not in text and "/" not in text
    encoded = msgspec.json.encode(sealed)
    assert encoded == msgspec.json.encode(msgspec.json.decode(encoded, type=SealedFields))
    assert list(msgspec.json.decode(encoded)) == list(crypto.SEALED_FIELDS)
    minimal = msgspec.json.encode(crypto.seal_fields(key, TRACE, PlainFields(content="c")))
    assert list(msgspec.json.decode(minimal)) == ["content", "tags"]


def test_a_field_moved_to_another_trace_is_refused() -> None:
    key = crypto.new_data_key()
    sealed = crypto.seal_fields(key, TRACE, FULL)
    with pytest.raises(DecryptionFailed) as info:
        crypto.open_fields(key, OTHER_TRACE, sealed)
    assert OTHER_TRACE in str(info.value)
    assert "content" in str(info.value)


@pytest.mark.parametrize(
    ("source", "target"),
    [("content", "claim_value"), ("claim_key", "claim_value"), ("locator", "content")],
)
def test_a_ciphertext_moved_to_another_field_is_refused(source: str, target: str) -> None:
    key = crypto.new_data_key()
    sealed = crypto.seal_fields(key, TRACE, FULL)
    moved = msgspec.structs.replace(sealed, **{target: getattr(sealed, source)})
    with pytest.raises(DecryptionFailed, match=f"'{target}'"):
        crypto.open_fields(key, TRACE, moved)


def test_fields_of_one_trace_do_not_open_under_another_traces_key() -> None:
    sealed = crypto.seal_fields(crypto.new_data_key(), TRACE, FULL)
    with pytest.raises(DecryptionFailed):
        crypto.open_fields(crypto.new_data_key(), TRACE, sealed)


def test_a_changed_base64_character_is_refused() -> None:
    key = crypto.new_data_key()
    sealed = crypto.seal_fields(key, TRACE, FULL)
    text = sealed.content
    for index, char in enumerate(text):
        other = "A" if char != "A" else "B"
        changed = text[:index] + other + text[index + 1 :]
        with pytest.raises(DecryptionFailed):
            crypto.open_fields(key, TRACE, msgspec.structs.replace(sealed, content=changed))


@pytest.mark.parametrize(
    "spoil",
    [
        lambda t: t + "=",
        lambda t: t + "!",
        lambda t: "!" + t,
        lambda t: t[:5] + " " + t[5:],
        lambda t: t.replace("-", "+").replace("_", "/") if ("-" in t or "_" in t) else t + "+",
        lambda t: t + "é",
    ],
)
def test_non_canonical_base64_is_refused(spoil: object) -> None:
    key = crypto.new_data_key()
    sealed = crypto.seal_fields(key, TRACE, FULL)
    assert callable(spoil)
    with pytest.raises(DecryptionFailed, match="base64"):
        crypto.open_fields(
            key, TRACE, msgspec.structs.replace(sealed, content=spoil(sealed.content))
        )


def test_a_trace_id_with_nul_is_refused() -> None:
    with pytest.raises(VaultError, match="NUL"):
        crypto.seal_fields(crypto.new_data_key(), "tr_a\x00b", FULL)


# -- wrap / unwrap / rewrap ----------------------------------------------------


def test_wrap_unwrap_round_trip() -> None:
    master, data_key = crypto.new_master_key(), crypto.new_data_key()
    wrapped = crypto.wrap(master, data_key)
    assert len(wrapped) == crypto.WRAPPED_BYTES == 40
    assert data_key not in wrapped
    assert crypto.unwrap(master, wrapped) == data_key


def test_unwrap_under_another_master_is_refused_naming_only_the_key_id() -> None:
    master, other = crypto.new_master_key(), crypto.new_master_key()
    data_key = crypto.new_data_key()
    wrapped = crypto.wrap(master, data_key)
    with pytest.raises(DecryptionFailed) as info:
        crypto.unwrap(other, wrapped)
    message = str(info.value)
    assert crypto.key_id(other) in message
    assert_no_secret_in(message, master, other, data_key)


def test_a_tampered_or_truncated_wrapped_key_is_refused() -> None:
    master = crypto.new_master_key()
    wrapped = crypto.wrap(master, crypto.new_data_key())
    for index in range(len(wrapped)):
        with pytest.raises(DecryptionFailed):
            crypto.unwrap(master, flip(wrapped, index))
    with pytest.raises(DecryptionFailed, match="40 bytes"):
        crypto.unwrap(master, wrapped[:-8])


def test_rewrap_moves_a_key_to_the_new_master() -> None:
    old, new = crypto.new_master_key(), crypto.new_master_key()
    data_key = crypto.new_data_key()
    wrapped = crypto.wrap(old, data_key)
    rewrapped = crypto.rewrap(old, new, wrapped)
    assert crypto.unwrap(new, rewrapped) == data_key
    with pytest.raises(DecryptionFailed):
        crypto.unwrap(old, rewrapped)
    # A key already re-wrapped (a rotation resumed after a crash) is refused,
    # not wrapped twice: the stored key id tells the caller to skip it.
    with pytest.raises(DecryptionFailed):
        crypto.rewrap(old, new, rewrapped)


def test_rewrap_leaves_sealed_payloads_readable() -> None:
    old, new = crypto.new_master_key(), crypto.new_master_key()
    data_key = crypto.new_data_key()
    sealed = crypto.seal_fields(data_key, TRACE, FULL)
    rewrapped = crypto.rewrap(old, new, crypto.wrap(old, data_key))
    assert crypto.open_fields(crypto.unwrap(new, rewrapped), TRACE, sealed) == FULL


# -- key ids and blind terms ---------------------------------------------------


def test_key_ids_are_stable_short_and_different_per_master() -> None:
    master = crypto.new_master_key()
    assert crypto.key_id(master) == crypto.key_id(MasterKey(bytes(master)))
    assert len(crypto.key_id(master)) == 16
    int(crypto.key_id(master), 16)
    ids = {crypto.key_id(crypto.new_master_key()) for _ in range(200)}
    assert len(ids) == 200
    assert crypto.key_id(master) not in master.hex()


def test_key_id_of_a_fixed_key_is_pinned() -> None:
    # Stored next to every wrapped key: it must never change between versions.
    # HMAC-SHA256(32 zero bytes, b"hikmah key id"), first 8 bytes.
    assert crypto.key_id(MasterKey(bytes(32))) == "3b3b359d8328a760"


def test_blind_terms_are_stable_per_key_and_differ_across_keys_and_domains() -> None:
    key, other = crypto.new_index_key(), crypto.new_index_key()
    term = crypto.blind(key, "kubernetes")
    assert term == crypto.blind(key, "kubernetes")
    assert len(term) == 32
    int(term, 16)
    assert term != crypto.blind(other, "kubernetes")
    assert term != crypto.blind(key, "kubernete")
    assert term != crypto.blind(key, "kubernetes", domain="tag")
    assert "kubernetes" not in term


def test_a_blind_domain_must_be_plain() -> None:
    key = crypto.new_index_key()
    for domain in ("", "te\x00rm"):
        with pytest.raises(VaultError, match="domain"):
            crypto.blind(key, "x", domain=domain)


def test_blind_of_a_fixed_key_is_pinned() -> None:
    # The index is keyed by these strings: changing the construction would
    # make every existing posting unreachable.
    # HMAC-SHA256(32 zero bytes, b"term\x00hikmah"), first 16 bytes.
    assert crypto.blind(IndexKey(bytes(32)), "hikmah") == "306136f92cc2b0e6ac16c6cf0961701e"


# -- properties ----------------------------------------------------------------

KEYS = st.binary(min_size=32, max_size=32)


@settings(max_examples=200, deadline=None)
@given(key=KEYS, plaintext=st.binary(max_size=300), aad=st.binary(max_size=64))
def test_property_seal_round_trips(key: bytes, plaintext: bytes, aad: bytes) -> None:
    assert (
        crypto.open_sealed(DataKey(key), crypto.seal(DataKey(key), plaintext, aad=aad), aad=aad)
        == plaintext
    )


@settings(max_examples=200, deadline=None)
@given(
    key=KEYS,
    trace_id=st.text(
        st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=40
    ),
    content=st.text(),
    tags=st.lists(st.text(), max_size=6).map(tuple),
    claim_key=st.none() | st.text(),
    claim_value=st.none() | st.text(),
    locator=st.none() | st.text(),
)
def test_property_fields_round_trip_any_unicode(
    key: bytes,
    trace_id: str,
    content: str,
    tags: tuple[str, ...],
    claim_key: str | None,
    claim_value: str | None,
    locator: str | None,
) -> None:
    plain = PlainFields(
        content=content, tags=tags, claim_key=claim_key, claim_value=claim_value, locator=locator
    )
    sealed = crypto.seal_fields(DataKey(key), trace_id, plain)
    assert crypto.open_fields(DataKey(key), trace_id, sealed) == plain


@settings(max_examples=300, deadline=None)
@given(
    key=KEYS,
    plaintext=st.binary(max_size=100),
    aad=st.binary(max_size=16),
    data=st.data(),
)
def test_property_any_single_byte_change_is_detected(
    key: bytes, plaintext: bytes, aad: bytes, data: st.DataObject
) -> None:
    sealed = crypto.seal(DataKey(key), plaintext, aad=aad)
    index = data.draw(st.integers(0, len(sealed) - 1), label="index")
    delta = data.draw(st.integers(1, 255), label="delta")
    with pytest.raises(DecryptionFailed):
        crypto.open_sealed(DataKey(key), flip(sealed, index, delta), aad=aad)


@settings(max_examples=200, deadline=None)
@given(key=KEYS, master=KEYS, data=st.data())
def test_property_any_single_byte_change_of_a_wrapped_key_is_detected(
    key: bytes, master: bytes, data: st.DataObject
) -> None:
    wrapped = crypto.wrap(MasterKey(master), DataKey(key))
    index = data.draw(st.integers(0, len(wrapped) - 1), label="index")
    delta = data.draw(st.integers(1, 255), label="delta")
    with pytest.raises(DecryptionFailed):
        crypto.unwrap(MasterKey(master), flip(wrapped, index, delta))


@settings(max_examples=200, deadline=None)
@given(
    content=st.text(min_size=8, max_size=200),
    tag=st.text(min_size=8, max_size=40),
    claim=st.text(min_size=8, max_size=40),
)
def test_property_no_plaintext_appears_in_sealed_output(content: str, tag: str, claim: str) -> None:
    key = crypto.new_data_key()
    raw = crypto.seal(key, content.encode(), aad=b"")
    assert content.encode() not in raw
    plain = PlainFields(
        content=content, tags=(tag,), claim_key=claim, claim_value=claim, locator=claim
    )
    sealed = msgspec.json.encode(crypto.seal_fields(key, TRACE, plain))
    # What the fields hold, not their names ("claim_ke" is part of the name "claim_key").
    stored = " ".join(msgspec.json.decode(sealed, type=dict[str, str]).values())
    for text in (content, tag, claim):
        assert text not in stored
        assert text.encode() not in stored.encode()
