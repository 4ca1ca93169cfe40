"""Pairing codes, invitations and join requests; key envelopes to a prekey."""

from __future__ import annotations

import msgspec
import pytest

from hikmah.model.errors import ConflictError, InvalidInput
from hikmah.sync.device import DeviceKey, Untrusted
from hikmah.sync.envelope import PrekeyPair, envelope_file, open_keys, seal_keys
from hikmah.sync.pairing import PairingCode, accept_join, invite, join, open_invitation

NOW = 1_790_000_000_000
A, B, C = DeviceKey.generate(), DeviceKey.generate(), DeviceKey.generate()


def test_a_code_reads_back_in_any_case_with_dashes_or_spaces() -> None:
    code = PairingCode.new()
    text = code.text
    assert text.startswith("HKS1-") and len(text.replace("-", "")) == 4 + 29
    assert PairingCode.parse(text) == code
    assert PairingCode.parse(text.lower().replace("-", " ")) == code
    assert code.secret.hex() not in repr(code)


def test_every_mistyped_character_of_a_code_is_caught() -> None:
    code = PairingCode(bytes(range(16)))
    text = code.text
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
    for at, char in enumerate(text):
        if at < 5 or char == "-":
            continue
        for other in alphabet.replace(char, ""):
            typo = text[:at] + other + text[at + 1 :]
            with pytest.raises(InvalidInput):
                PairingCode.parse(typo)
    for broken in ("", "HKS1", text[:-2], "HKS2" + text[4:], text + "AB"):
        with pytest.raises(InvalidInput):
            PairingCode.parse(broken)


def pair() -> tuple[object, bytes, bytes]:
    opened, invitation_file = invite(A, name="laptop", now_ms=NOW)
    invitation = open_invitation(opened.code, invitation_file, A.device_id)
    request = join(B, opened.code, invitation, name="workstation", now_ms=NOW + 1)
    return opened, invitation_file, request


def test_the_whole_exchange_pairs_once() -> None:
    opened, invitation_file, request_file = pair()
    invitation = open_invitation(opened.code, invitation_file, A.device_id)  # type: ignore[attr-defined]
    assert invitation.key == A.public.raw and invitation.name == "laptop"
    request, used = accept_join(opened, A.device_id, request_file, B.device_id, now_ms=NOW + 2)  # type: ignore[arg-type]
    assert request.key == B.public.raw and request.name == "workstation"
    assert used.used_by == B.device_id
    # The same request again is the same pairing (a retry after a crash) ...
    again, _ = accept_join(used, A.device_id, request_file, B.device_id, now_ms=NOW + 3)
    assert again == request
    # ... another device's request with the same code is refused.
    third = join(C, used.code, invitation, name="dev box", now_ms=NOW + 4)
    with pytest.raises(ConflictError, match="already used"):
        accept_join(used, A.device_id, third, C.device_id, now_ms=NOW + 5)


def test_another_code_opens_no_invitation_and_makes_no_accepted_request() -> None:
    opened, invitation_file, _ = pair()
    wrong = PairingCode.new()
    with pytest.raises(Untrusted, match="not the invitation of this code"):
        open_invitation(wrong, invitation_file, A.device_id)
    invitation = open_invitation(opened.code, invitation_file, A.device_id)  # type: ignore[attr-defined]
    forged = join(C, wrong, invitation, name="mallory", now_ms=NOW)
    with pytest.raises(Untrusted, match="not made with this invitation's code"):
        accept_join(opened, A.device_id, forged, C.device_id, now_ms=NOW)  # type: ignore[arg-type]


def test_a_proof_cannot_be_moved_to_another_key() -> None:
    opened, invitation_file, request_file = pair()
    body, signature = request_file.split(b"\n")[:2]
    request = msgspec.json.decode(body)
    request["joiner"], request["key"] = (
        C.device_id,
        msgspec.json.decode(msgspec.json.encode(C.public.raw)),
    )
    moved = msgspec.json.encode(request)
    # Signed properly by C, with B's proof: the proof binds B's key.
    import base64

    forged = moved + b"\n" + base64.b64encode(C.sign(moved)) + b"\n"
    with pytest.raises(Untrusted):
        accept_join(opened, A.device_id, forged, C.device_id, now_ms=NOW)  # type: ignore[arg-type]
    assert signature  # the original stays valid for B
    # An invitation copied into another device's directory is refused too.
    with pytest.raises(Untrusted):
        open_invitation(opened.code, invitation_file, C.device_id)  # type: ignore[attr-defined]


def test_an_expired_invitation_is_refused_on_both_sides() -> None:
    opened, invitation_file = invite(A, name="laptop", now_ms=NOW, lifetime_ms=1000)
    invitation = open_invitation(opened.code, invitation_file, A.device_id)
    with pytest.raises(ConflictError, match="expired"):
        join(B, opened.code, invitation, name="workstation", now_ms=NOW + 1000)
    request = join(B, opened.code, invitation, name="workstation", now_ms=NOW + 999)
    with pytest.raises(ConflictError, match="expired"):
        accept_join(opened, A.device_id, request, B.device_id, now_ms=NOW + 1000)


def test_every_altered_byte_of_a_join_request_is_refused() -> None:
    opened, _, request_file = pair()
    for at in range(0, len(request_file), 3):
        tampered = request_file[:at] + bytes([request_file[at] ^ 0x04]) + request_file[at + 1 :]
        with pytest.raises((Untrusted, ConflictError)):
            accept_join(opened, A.device_id, tampered, B.device_id, now_ms=NOW)  # type: ignore[arg-type]


def test_data_keys_reach_the_recipient_and_nobody_else() -> None:
    prekey = PrekeyPair.generate()
    keys = {"tr_1": bytes(32), "tr_2": bytes(range(32))}
    data = seal_keys(A, B.device_id, prekey.public, keys)
    opened = open_keys(
        data, sender=A.public, recipient=B.device_id, prekeys={prekey.public.id: prekey}
    )
    assert opened == keys
    assert envelope_file(B.device_id, prekey.public.id, 1, 9).endswith(
        "000000000001-000000000009.keys"
    )
    with pytest.raises(Untrusted):
        open_keys(data, sender=C.public, recipient=B.device_id, prekeys={prekey.public.id: prekey})
    with pytest.raises(Untrusted):
        open_keys(data, sender=A.public, recipient=C.device_id, prekeys={prekey.public.id: prekey})
    other = PrekeyPair.generate()
    with pytest.raises(Untrusted, match="does not open"):
        open_keys(data, sender=A.public, recipient=B.device_id, prekeys={prekey.public.id: other})


def test_once_its_prekey_is_destroyed_an_envelope_opens_for_nobody() -> None:
    prekey = PrekeyPair.generate()
    data = seal_keys(A, B.device_id, prekey.public, {"tr_1": bytes(32)})
    kept = PrekeyPair.from_bytes(prekey.to_bytes())
    assert open_keys(data, sender=A.public, recipient=B.device_id, prekeys={kept.public.id: kept})
    with pytest.raises(KeyError):
        open_keys(data, sender=A.public, recipient=B.device_id, prekeys={})
    for at in range(0, len(data), 7):
        tampered = data[:at] + bytes([data[at] ^ 0x10]) + data[at + 1 :]
        with pytest.raises((Untrusted, KeyError)):
            open_keys(
                tampered, sender=A.public, recipient=B.device_id, prekeys={kept.public.id: kept}
            )
