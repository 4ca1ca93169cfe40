"""The credential detector against its evaluation sets.

``tests/eval/secrets/dev.toml`` is the set the detector was developed against;
``heldout.toml`` was written afterwards, independently, and only measured. Each
holds realistic secrets the detector must refuse and look-alikes from developer
notes it must store.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from hikmah.model.secrets import find_secret

SETS = Path(__file__).parent.parent / "eval" / "secrets"
REQUIRED = 0.95
# Splits literal tokens in the files so that a secret scanner does not flag them.
_BREAK = "{*}"


def _load(name: str) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    with (SETS / f"{name}.toml").open("rb") as file:
        data = tomllib.load(file)
    secrets = [{**entry, "text": entry["text"].replace(_BREAK, "")} for entry in data["secret"]]
    lookalikes = [
        {**entry, "text": entry["text"].replace(_BREAK, "")} for entry in data["lookalike"]
    ]
    return secrets, lookalikes


@pytest.mark.parametrize(
    "name",
    [
        "dev",
        # Not tuned to at first: measured at 90.0% of its secrets refused and 96.9%
        # of its look-alikes stored, then 90.8% / 97.7% after fixes for dev's misses
        # and one plain bug it showed. Its remaining misses were then treated as
        # categories of shape (HTTP clients' -u user:pass, XML elements, credential
        # flags, bytes literals, base64 read as a path, labelled JWT parts, user /
        # password pairs, named tokens without "=", bare basic-auth base64) and
        # supported in general: 100% / 100% since, so it no longer measures
        # anything blind; heldout2 does.
        "heldout",
        # Written blind by another engineer while heldout's categories were added,
        # copied in after the last detector change and only measured: 73.7% of its
        # secrets refused (41 of 156 missed), 94.1% of its look-alikes stored (10 of
        # 169 refused). Its misses were then read and treated as categories (vendor
        # prefixes, names built around token/key/pass/pwd/auth, passwords on mysql,
        # sshpass, redis-cli, net use, ConvertTo-SecureString and htpasswd command
        # lines, URL passwords starting with a symbol, Go DSNs, prose in six other
        # languages, spaced-out tokens; and, for the look-alikes, PEM headers in
        # prose, secret names, SealedSecret ciphertext, UI text, test values):
        # 100% / 98.8% since. The two look-alikes still refused are ones the unit
        # tests want refused (password=xxxxxxxx, AWS's documented example key). It
        # no longer measures anything blind; the next held-out set does.
        "heldout2",
        # Written blind by a third engineer, weighted to what real notes hold (.env
        # lines, config files, command lines, vendor tokens, prose in seven
        # languages), copied in after heldout2's categories and measured once: 93.8%
        # of its secrets refused (15 of 240 missed), 93.7% of its look-alikes stored
        # (16 of 252 refused). Its misses were then read and treated as categories
        # (Sentry DSNs with long project ids, NAME_AUTH base64 of user:pass, Tailscale
        # and Docker tokens, Telegram bot URLs, a call naming a credential and its
        # value, PDO/JDBC/mysqli positional passwords, sqlcmd -P, OpenLDAP -w,
        # smbclient -U user%pass, a quoted flag value starting with "-", prose with no
        # verb in other languages, Databricks tokens split by a line break; and, for
        # the look-alikes, masks and x-filled prefixes, next-line example comments,
        # ARNs and {{resolve:}} references, Helm password keys, sentences in any
        # language, @file values, "not a secret", ciphertext so labelled, Tailscale
        # public node keys, alphabet-spelling samples): 100% / 99.2% since. The two
        # look-alikes still refused are AWS's documented example keys (the unit tests
        # want them refused) and Stripe's docs sample sk_test_ key (a test-mode key is
        # a real credential; only the exact string would tell the sample apart). It no
        # longer measures anything blind.
        "heldout3",
        # Written blind by a fourth engineer (what developers paste: terminal sessions,
        # configs of many tools, connection strings, cookies, webhooks, prose in ten
        # languages), copied in after heldout3's categories and measured once: 89.0% of
        # its secrets refused (25 of 228 missed), 94.8% of its look-alikes stored (12
        # of 231 refused). Its misses were then read and treated as categories (a bug:
        # a bare value stopped at "&" as in a query string, so password=D6&XTm... in a
        # my.cnf and become_pass: 7Qf&?+... passed; session cookies, Teams and
        # Mattermost webhooks, Oracle JDBC user/password@, Rails master.key, Prefect,
        # LaunchDarkly, Yandex, Asana and Confluent keys, prose in Dutch, Polish,
        # Turkish and Japanese; and, for the look-alikes, values cut short with "...",
        # Slack placeholders without digits, "changeme" for a key, ${VAR:?} expansion,
        # Vault agent annotations, {{ lookup() }} templates, Mapbox public pk. tokens,
        # hyphenated dummy passwords): 98.7% / 98.7% since. Still missed: a password
        # after "vault_password_file content:", a token spaced out by two or more
        # spaces, one concatenated from string literals. Still refused: AWS's example
        # keys (the unit tests want them refused) and a Sentry DSN, public by Sentry's
        # design but kept refused because heldout3 counts one as a secret. It no
        # longer measures anything blind.
        "heldout4",
    ],
)
def test_secrets_are_refused_and_look_alikes_stored(name: str) -> None:
    secrets, lookalikes = _load(name)
    assert len(secrets) >= 120 and len(lookalikes) >= 120
    missed = [entry for entry in secrets if find_secret(entry["text"]) is None]
    refused = [
        (entry, label) for entry in lookalikes if (label := find_secret(entry["text"])) is not None
    ]
    recall = 1 - len(missed) / len(secrets)
    stored = 1 - len(refused) / len(lookalikes)
    print(f"\n{name}: secrets refused {recall:.1%}, look-alikes stored {stored:.1%}")
    for entry in missed:
        print(f"  missed ({entry['shape']}): {entry['text']!r}")
    for entry, label in refused:
        print(f"  refused as {label} ({entry['why']}): {entry['text']!r}")
    assert recall >= REQUIRED, f"{len(missed)} of {len(secrets)} secrets missed"
    assert stored >= REQUIRED, f"{len(refused)} of {len(lookalikes)} look-alikes refused"
