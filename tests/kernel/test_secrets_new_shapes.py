"""The credential detector on key files, service credentials and prose passwords, and on
text disguised by invisible characters, fullwidth and look-alike letters or split tokens."""

from __future__ import annotations

import base64
import sys
import unicodedata

import pytest

from hikmah.model.secrets import find_secret, redact
from tests.kernel.secrets_cases import ALNUM, GITHUB, HEX, JWT, PEM, _base64

# The shapes and the normalisation added after an adversary's set; the old
# detector missed every one of these.
_SNOWFLAKE = base64.urlsafe_b64encode(b"712345678901234567").decode().rstrip("=")
NEW_SHAPES: list[tuple[str, str]] = [
    ("tls.key: " + _base64(PEM + "\n"), "private key"),
    (
        "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nPublic-Lines: 1\n"
        "AAAAC3NzaC1lZDI1NTE5AAAAIBm3\nPrivate-Lines: 1\n" + ALNUM + "\nPrivate-MAC: " + HEX * 4,
        "private key",
    ),
    (
        "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=" + ALNUM * 2 + "==;"
        "EndpointSuffix=core.windows.net",
        "Azure key",
    ),
    ("Endpoint=sb://x.servicebus.windows.net/;SharedAccessKey=" + ALNUM + "=", "Azure key"),
    ("machine api.example.com login alice password s3cr3t-Pa55", "netrc password"),
    ("machine api.example.com\n  login alice\n  password s3cr3t-Pa55", "netrc password"),
    ("db.internal:5432:app:app_user:Xk29!qLm", "pgpass password"),
    (
        '{"auths": {"ghcr.io": {"auth": "' + _base64("ci:Tr0ub4dor&3") + '"}}}',
        "registry credential",
    ),
    ("bot token " + _SNOWFLAKE + ".GhT2xQ." + ALNUM[:30], "Discord bot token"),
    ("sid AC" + HEX * 2 + " and the auth token is " + HEX[::-1] * 2, "Twilio credentials"),
    ("VAULT_TOKEN=hv" + "s." + ALNUM, "Vault token"),
    ("the wifi password is hunter2!42", "password in prose"),
    ("FYI the password for the staging db is Tr0ub4dor&3", "password in prose"),
    ("vpn password was changed to Autumn-2025!", "password in prose"),
    ("ssh deploy@10.0.0.5 with password Winter2024!", "password in prose"),
    ("login is admin / Sup3rS3cret!", "login and password"),
    ("docker login -u ci -p " + ALNUM[:24] + " registry.example.com", "login and password"),
    ('<add key="ApiSecret" value="' + ALNUM[:28] + '" />', "secret assignment"),
    ('- name: PGPASSWORD\n  value: "' + ALNUM[:16] + '"', "password assignment"),
]
NORMALISED: list[tuple[str, str]] = [
    # A zero-width space, a word joiner, a soft hyphen inside the token.
    ("token " + GITHUB[:10] + "\u200b" + GITHUB[10:], "GitHub token"),
    ("token " + "\u2060".join(GITHUB), "GitHub token"),
    ("pass\u00adword=Hunter22!x", "password assignment"),
    # Fullwidth letters.
    ("".join(chr(ord(c) + 0xFEE0) for c in GITHUB), "GitHub token"),
    ("ｐａｓｓｗｏｒｄ＝Ｈｕｎｔｅｒ２２！ｘ", "password assignment"),
    # Cyrillic and Greek look-alikes.
    ("token " + GITHUB.replace("a", "\u0430").replace("c", "\u0441"), "GitHub token"),
    ("p\u0430ssword = Correct-Horse-42", "password assignment"),
    ("key \u0391KIAIOSFODNN7EXAMPLE", "AWS access key"),
    # A JWT split by spaces, by newlines, at its dots.
    ("token " + JWT[:30] + " " + JWT[30:70] + "\n" + JWT[70:], "JSON Web Token"),
    ("jwt " + JWT.replace(".", ".\n"), "JSON Web Token"),
    ("id_token=" + JWT[:40] + "\n    " + JWT[40:], "JSON Web Token"),
    ("the bot token is " + GITHUB[:20] + " " + GITHUB[20:], "GitHub token"),
]

NEW_LOOK_ALIKES: list[str] = [
    "the password policy is 12 characters",
    "reset your password at the link",
    "the password is stored in the vault",
    "login is admin / the usual one",
    "login: admin/admin is the factory default",
    "the password hash is 5f4dcc3b5aa765d61d8327deb882cf99",
    "the password is sha256-hashed and salted",
    "Remember to change the default password on first boot",
    "machine api.example.com login USERNAME password TOKEN",
    "machine github.com login octocat password $GITHUB_TOKEN",
    "tls.crt: " + _base64("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"),
    "AccountKey=<storage-account-key>",
    "localhost:5432:*:postgres:*",
    "worker:10:queue:default:started",
    "mac 00:11:22:33:44:55",
    '{"auth": "' + _base64("just some words") + '"}',
    "Twilio account SID AC" + HEX * 2 + " is in the dashboard",
    "PuTTY-User-Key-File-3 is the header of a .ppk file",
    "sk-learn 1.4.2 needs numpy 1.26",
    "API_KEY=your-api-key-here",
    "- name: LOG_LEVEL\n  value: debug",
    "mkdir -p /srv/app2 && docker login ghcr.io",
    # Text in other scripts is normalised too, and stays clean.
    "Пароль хранится в хранилище, токен обновляется ежедневно",
    "فارسی\u200cنویسی با نیم\u200cفاصله",
    "Ｐｌｅａｓｅ ｒｅａｄ ｔｈｅ ｄｏｃｓ",
]


@pytest.mark.parametrize(("text", "label"), NEW_SHAPES + NORMALISED)
def test_new_shapes_and_normalised_text_are_found(text: str, label: str) -> None:
    assert find_secret(text) == label


@pytest.mark.parametrize("text", NEW_LOOK_ALIKES)
def test_new_look_alikes_pass(text: str) -> None:
    assert find_secret(text) is None


@pytest.mark.parametrize(("text", "label"), NEW_SHAPES + NORMALISED)
def test_redaction_of_new_shapes_withholds_the_original_span(text: str, label: str) -> None:
    redacted = redact(text)
    assert "[withheld]" in redacted
    assert find_secret(redacted) is None
    assert redact(redacted) == redacted


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # The marker covers the token with the invisible characters inside it.
        ("use " + GITHUB[:10] + "\u200b" + GITHUB[10:] + " now", "use [withheld] now"),
        ("jwt " + JWT[:40] + "\n" + JWT[40:] + " end", "jwt [withheld] end"),
        ("the wifi password is hunter2!42.", "the wifi password is [withheld]."),
    ],
)
def test_redact_maps_normalised_spans_back(text: str, expected: str) -> None:
    assert redact(text) == expected


def test_every_format_character_is_ignored() -> None:
    # The table of invisible characters is written out; it must cover category Cf
    # of the Unicode version this Python ships.
    formats = [chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) == "Cf"]
    token = GITHUB[:8] + "{}" + GITHUB[8:]
    assert all(find_secret(token.format(char)) == "GitHub token" for char in formats)
