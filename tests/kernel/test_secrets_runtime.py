"""The credential detector on any text: it never crashes, and its scan stays linear on
adversarial repetitions."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hikmah.model.secrets import find_secret, redact
from tests.kernel.secrets_cases import LINEAR_BOUND_S, _slowest


@given(st.text())
@settings(max_examples=300)
def test_find_secret_never_crashes(text: str) -> None:
    label = find_secret(text)
    assert label is None or isinstance(label, str)
    assert isinstance(redact(text), str)


@pytest.mark.parametrize(
    "text", ["\u017fecret=hunter22x", "pa\u017f\u017fword=x", "api_\u212aey=x"]
)
def test_unicode_case_folding_look_alikes_do_not_crash(text: str) -> None:
    # Under Unicode case folding the long s matches "s" and the Kelvin sign "k".
    find_secret(text)
    redact(text)


@given(st.text(alphabet="password=:@/'\"_-eyJ.ghp sk AKIA$ {}\\*\n", max_size=200))
@settings(max_examples=300)
def test_credential_soup_never_crashes(text: str) -> None:
    find_secret(text)
    redact(text)


ADVERSARIAL: list[str] = [
    "token-",
    "a=",
    "password=",
    "password='",
    'password="',
    "password=$",
    "password=hunter22 ",
    "Password: Sunshine x ",
    "\n:param password: ",
    "password: *",
    "eyJ",
    "eyJa.",
    "://:@",
    "a://",
    "a://b:c",
    "ghp_",
    "github_pat_",
    "sk-",
    "sk-ant-",
    "xoxb-",
    "AKIA",
    "Bearer ",
    "Authorization: Bearer ",
    "-----BEGIN ",
    "-----BEGIN RSA PRIVATE KEY-----",
    "apikey_0",
    "x",
    "api key",
    "secret-",
    "a_",
    "A_",
    "%40",
    "eyJa ",
    "eyJa.\n",
    "ghp_a1 B2 ",
    "LS0tLS1CRUdJTi",
    "machine a login b ",
    "default login a ",
    "a:11:b:c:d\n",
    '"auth": "YTpi',
    "Private-Lines: 1\nAAAAAAAAAAAAAAAAAAAA\n",
    "AC0123456789abcdef0123456789abcdef ",
    "0123456789abcdef0123456789abcdef ",
    "MTIzNDU2Nzg5MDEyMzQ1Njc4.",
    "password is ",
    "password for the ",
    "login is a/",
    "docker login -p ",
    'key="password" value=',
    "AccountKey=",
    "\u200b",
    "\u0430",
    "ｐ",
]


@pytest.mark.parametrize("unit", ADVERSARIAL)
def test_runtime_is_linear(unit: str) -> None:
    # A generous bound: catastrophic backtracking on 200k characters takes
    # minutes, linear scanning a fraction of a second.
    text = unit * (200_000 // len(unit) + 1)
    assert _slowest(text) < LINEAR_BOUND_S


def test_twenty_thousand_tokens_are_quick() -> None:
    assert _slowest("token-" * 20_000) < LINEAR_BOUND_S


@given(st.text(alphabet="pasword=:@/'\"_-eyJ.AKIghkx $*\\", min_size=1, max_size=12))
@settings(max_examples=25, deadline=None)
def test_runtime_is_linear_on_repeated_fragments(unit: str) -> None:
    text = unit * (100_000 // len(unit) + 1)
    assert _slowest(text) < LINEAR_BOUND_S
