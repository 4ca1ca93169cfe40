"""``check_fields``: the first offending field is named and its value never echoed, clear
short fields are remembered, and a vouched text is let through once."""

from __future__ import annotations

import pytest

from hikmah.model import secrets
from hikmah.model.errors import SecretDetected
from hikmah.model.secrets import check_fields, fields, find_secret, redact
from tests.kernel.secrets_cases import ALNUM, CREDENTIALS, GITHUB


def test_check_fields_names_the_first_offending_field() -> None:
    token = "gh" + "p_" + ALNUM[:36]
    with pytest.raises(SecretDetected) as caught:
        check_fields(
            [
                ("content", "a harmless note"),
                ("tags[0]", "project:hikmah"),
                ("tags[1]", None),
                ("tags[2]", f"token {token}"),
                ("claim_value", "password=princess1"),
            ]
        )
    message = str(caught.value)
    assert message.startswith("tags[2] ")
    assert "GitHub token" in message
    assert "vault:" in message
    assert "$ENV_VAR" in message
    assert caught.value.reason == "secret_detected"


@pytest.mark.parametrize("text", [text for text, _label in CREDENTIALS])
def test_check_fields_never_echoes_the_value(text: str) -> None:
    with pytest.raises(SecretDetected) as caught:
        check_fields([("claim_value", text)])
    message = str(caught.value)
    assert "claim_value" in message
    assert text not in message
    # No stretch of the credential itself (what redact withholds), not even
    # a part that would narrow a guess.
    redacted = redact(text)
    prefix = len(text[: redacted.index("[withheld]")])
    suffix = len(redacted) - redacted.index("[withheld]") - len("[withheld]")
    credential = text[prefix : len(text) - suffix]
    windows = {credential[i : i + 8] for i in range(max(1, len(credential) - 7))}
    # The label is fixed text ("password assignment") and may share a word
    # with the value; everything else must share nothing.
    label = find_secret(text)
    assert label is not None
    assert f"({label})" in message
    rest = message.replace(label, "")
    assert not [window for window in windows if window in rest]


def test_check_fields_accepts_clean_fields() -> None:
    check_fields([("content", "the deploy uses vault"), ("source", None), ("locator", "")])


def test_check_fields_accepts_an_empty_iterable() -> None:
    check_fields([])


def test_a_short_field_is_refused_every_time_and_only_clear_ones_are_remembered() -> None:
    # Short values found clear are kept (tags and sources repeat from write to write);
    # a credential never is, so the same tag is refused on every write.
    for _ in range(2):
        with pytest.raises(SecretDetected, match=r"tags\[0\]"):
            check_fields([("tags[0]", GITHUB)])
    assert GITHUB not in fields._clear
    check_fields([("tags[0]", "deploy-notes")])
    assert "deploy-notes" in fields._clear


def test_a_vouched_text_is_let_through_once() -> None:
    # The daemon vouches only for what its checking worker's find_secret found clear;
    # the vouch is that promise, taken once, and detection runs again after it.
    note = f"the deploy notes mention {GITHUB} in passing " + "and more " * 20
    secrets.vouch([note])
    check_fields([("content", note)])
    assert note not in fields._vouched
    with pytest.raises(SecretDetected, match="content"):
        check_fields([("content", note)])
    secrets.vouch([note])
    secrets.unvouch([note])  # a page done: its vouches not taken go
    with pytest.raises(SecretDetected, match="content"):
        check_fields([("content", note)])
