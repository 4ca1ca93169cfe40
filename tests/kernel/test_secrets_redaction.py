"""``redact``: every credential withheld, overlapping spans as one, and nothing left to find
once withheld, even where a marker completes a new credential."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hikmah.model.secrets import find_secret, redact
from tests.kernel.secrets_cases import ALNUM, CREDENTIALS, JWT, PEM


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("password=princess1 and more", "password=[withheld] and more"),
        ('{"password": "hunter22!"}', '{"password": "[withheld]"}'),
        ('{\\"password\\": \\"hunter22!\\"}', '{\\"password\\": \\"[withheld]\\"}'),
        ("postgres://admin:hunter22@db/app", "postgres://admin:[withheld]@db/app"),
        ("use AK" + "IAIOSFODNN7EXAMPLE now", "use [withheld] now"),
        (f"jwt {JWT}.", "jwt [withheld]."),
        (f"before\n{PEM}\nafter", "before\n[withheld]\nafter"),
        ("cut off: -----BEGIN " + "RSA PRIVATE KEY-----\nMIIE", "cut off: [withheld]"),
        ("Authorization: Bearer " + ALNUM[:32], "Authorization: Bearer [withheld]"),
        ("nothing to see", "nothing to see"),
        ("password=server-only", "password=server-only"),
    ],
)
def test_redact(text: str, expected: str) -> None:
    assert redact(text) == expected


def test_redact_withholds_several_credentials() -> None:
    token = "gh" + "p_" + ALNUM[:36]
    text = f"a {token} b password=princess1 c postgres://u:hunter22@h d"
    assert redact(text) == "a [withheld] b password=[withheld] c postgres://u:[withheld]@h d"


def test_redact_merges_overlapping_spans() -> None:
    # The assignment's value is itself a token: one marker, not two.
    token = "gh" + "p_" + ALNUM[:36]
    assert redact(f"api_key={token} end") == "api_key=[withheld] end"


@pytest.mark.parametrize("text", [text for text, _label in CREDENTIALS])
def test_redacted_text_holds_no_credential(text: str) -> None:
    redacted = redact(text)
    assert "[withheld]" in redacted
    assert find_secret(redacted) is None


def test_redact_is_idempotent_on_credentials() -> None:
    for text, _label in CREDENTIALS:
        once = redact(text)
        assert redact(once) == once


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Once the value is withheld, "PASSWORD=[withheld];" reads as a URL's user part.
        ("s://PASSWORD=02/DBs:/;:s@D", "s://PASSWORD=[withheld];:[withheld]@D"),
        # Once the URL's password is withheld, ":[withheld]@D" reads as a long value.
        ("s://password=:s@D", "s://password=[withheld]@D"),
    ],
)
def test_a_marker_that_completes_a_new_credential_is_redacted_again(
    text: str, expected: str
) -> None:
    assert redact(text) == expected


# Pieces of credentials, whole or in parts (URL heads and tails, assignment heads,
# values that stop a URL's user part), the marker, and the punctuation that joins
# them: the soup in which withholding one span can complete another.
REDACTION_SOUP = st.lists(
    st.sampled_from(
        ["s://", "db://", "password=", "API_KEY: ", "secret=", "hunter22x", "pa55/word",
         ":s@D", ":pw@db", "@host", "u", "[withheld]", "[", "]", "=", ":", "@", "/", ";",
         "&", ",", "'", '"', " ", "\n", ".", "-", "gh" + "p_" + ALNUM[:36], "Bearer ",
         "Authorization: Basic ", "eyJhbGciOi", "AKIA", "-----BEGIN RSA PRIVATE KEY-----",
         "curl -u a:", "<token>", "</token>", "--token ", " / ", "admin", "Adm1n!2025",
         "auth: ", "YWRtaW46aHVudGVyMjI=", "api key ", " is ", "Zx9Kq2Lm8Np4Rt6Vw3Yb", "b'"]
    ),
    max_size=24,
).map("".join)  # fmt: skip


@given(st.one_of(REDACTION_SOUP, st.text(max_size=200)))
@settings(max_examples=1000)
def test_redaction_leaves_nothing_to_find_and_is_idempotent(text: str) -> None:
    once = redact(text)
    assert find_secret(once) is None, once
    assert redact(once) == once
