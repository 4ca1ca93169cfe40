"""Assignments to a credential's name, and a name and its value as separate fields.

An assignment: a name containing password, passwd, passphrase, secret,
api key, api token, access token, auth token, refresh token or private key
(any case, any separator: ``DB_PASSWORD``, ``apiKey``, ``x-api-key``,
``Private key``), then ``:``, ``=``, ``:=``, ``=>`` or ``==``, then a value
of at least 8 characters, possibly quoted (a Python bytes literal ``b'...'``
too); a bare value runs on through ``&`` (``password=D6&XTm^O``) unless what
follows is another query parameter (``&user=``) or ``&amp;``. Not a value cut
short with ``...`` after a prefix (``sk_live_...``), ``changeme`` and the like
for a key or token (a password may really be one), Bash's ``${API_TOKEN:?...}``,
Vault agent's ``agent-inject-secret-*`` annotations, a ``{{ ... }}`` template
read as a whole, a Mapbox public ``pk.eyJ`` token, or hyphenated words naming a
credential (``wrong-password``); or such a name and its value as separate fields (``<add
key="ApiSecret" value="..."/>``, a Kubernetes ``- name: PGPASSWORD`` /
``value: ...``); or an XML element so named, or named ``...token``
(``<password>...</password>``, ``<apiKey>``), whose value passes the same
test or reads as a password.

An assignment whose value describes the secret instead of being it is
allowed:

* a reference: starts with ``$ < % { *``, ``vault:``, ``env:``,
  ``redacted``, ``[redacted`` or ``[withheld`` (so redacted text stays
  clean), or with ``keyring:``, ``arn:``, ``ssm:``, ``sops:``;
* a description: a chain of lowercase words joined by ``-`` or ``_`` (or
  spaces, inside quotes) that contains a describing word (``server-only``,
  ``hashed_with_argon2id``), a single describing word (``placeholder``), or
  words ending in an ``-ed`` word and a date (``rotated-2026-09``); in both
  chain forms the first word is letters only, at least two of them, so
  ``x_rotated-2026-09`` and ``p_server_only`` are credentials;
* an environment variable name (``TYPESAFE_API_KEY``, ``_PRIVATE_KEY_TYPES``)
  or an HTTP header's name (``X-API-Key``);
* something that is plainly not a credential: a file path (``/run/secrets/db``,
  ``~/.pgpass``; made of names: a segment of 20+ base64 characters mixing
  cases and digits, a ``+`` or ``=`` padding make base64 that starts with
  ``/``, not a path), a URL (its password, if any, is caught by the URL shape),
  an ISO date, a code expression (``os.environ["X"]``, ``getpass()``,
  ``settings.SECRET_KEY``, ``std::env::var("X")``, ``process.env.X!``; code
  reading the environment counts as a reference) or a variable named after a credential
  (``self.password = password``, ``key_password=key_password``);
* an assignment to a name that is about the secret rather than the secret
  itself (``secretName``, ``PASSWORD_FILE``, ``private_key_path``,
  ``password_min_length``, ``api_key_header``);
* documentation: a docstring field (``:param password: ...``) or a sentence
  (``password: Password to send with the request.``), and text for people
  (``"password_hint": "At least 12 characters"``, a name ending in label,
  hint, message, error, placeholder, prompt...);
* a note in brackets (``old password: (rotated)``), an obvious test value (a
  word chain with test, fake, mock, dummy, demo: ``test-password``), or a value
  whose line comment calls it a placeholder or an example
  (``POSTGRES_PASSWORD=changeme  # placeholder``);
* a secret's name rather than its value: Helm's ``existingSecret=...``, and a
  ``--flag=value`` judged as a flag (``--secret=stripe-key`` names a secret in
  gcloud); a password's key in a Secret (``adminPasswordKey:``); SealedSecret
  ciphertext (64+ base64 characters after ``encryptedData``, or after text that
  calls it ciphertext or sealed) and SOPS ``ENC[...]`` values;
* a value whose next line is a comment pointing up at it (``# ^ example...``);
  a name inside an ARN or a CloudFormation ``{{resolve:...}}`` reference; a value
  read from a file (``password=@db-pass.txt``); a masked value (``sk-proj-••••``,
  ``ab****yz``); a sentence in any language, capitalised and ending in ``.!?``
  (``"Passwort vergessen?"``); a value the text calls "not a secret"; Tailscale's
  public ``nodekey:``/``discokey:``/``mkey:``; and a token value spelling the
  alphabet (``123456789:ABCdefGhIJK...``, a documentation sample).

A value still counts when a word in it ends in a digit (``princess1``,
``summer-2024``, ``ADMIN_PASS1``), when it is any other single word
(``sunshine``, ``mypassword``), or when it is a word chain with no
describing word (``correct-horse-battery-staple``). So ``password = user_pass``
in code is refused like ``password = admin_pass``: the two cannot be told
apart.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from hikmah.model.secrets.context import assignment_allowed, find_seal, in_prose, name_before
from hikmah.model.secrets.values import flag_value_is_secret, value_is_secret
from hikmah.model.secrets.words import METADATA_SUFFIXES

# Values are capped at 256 characters: a credential is never longer, and the
# cap keeps the work per candidate constant however long the input runs on.
KEYWORDS = (
    r"pass(?:word|wd|phrase)|secret|api[ ._-]?(?:key|token)"
    r"|(?:access|auth|refresh)[ ._-]?token|private[ ._-]?key"
)
_ASSIGNMENT = re.compile(
    r"(?P<kw>" + KEYWORDS + ")"
    # The rest of the name (_FILE, Name, _v2) and what closes it: a quote, a
    # bracket (config["password"]), Markdown bold (**Password**:) or the
    # backslash of escaped JSON ({\"password\": \"...\"}).
    r"(?P<tail>[A-Za-z0-9_.-]{0,40}+)[\\\"'`\]*]{0,4}+[ \t]{0,5}+"
    r"(?::=|=>|==|[:=])[ \t]{0,5}+(?:\*\*)?[ \t]{0,5}+"
    # A Python bytes literal (b'...') is quoted like a string.
    r"\\?(?:[bB][rR]?+(?=[\"'])|[rR][bB](?=[\"']))?+"
    r"(?:\"(?P<dq>[^\"\r\n]{1,256}+)\"|'(?P<sq>[^'\r\n]{1,256}+)'|`(?P<bq>[^`\r\n]{1,256}+)`"
    r"|[\"'`]?(?P<bare>[^\s\"'`,;&)\]}]{1,256}+))",
    re.IGNORECASE | re.ASCII,
)

# A name and its value as separate fields: .NET's <add key="ApiSecret" value="..."/>
# and a Kubernetes env entry (- name: PGPASSWORD / value: "...").
_KEY_VALUE = re.compile(
    r"(?<![A-Za-z0-9_])(?:key|name)[ \t]{0,3}+[=:][ \t]{0,3}+[\"']?(?P<name>[A-Za-z0-9_.:-]{1,64}+)"
    r"[\"']?(?:[ \t]{1,5}+|[ \t]{0,5}+\r?\n[ \t]{0,40}+)value[ \t]{0,3}+[=:][ \t]{0,3}+"
    r"(?:\"(?P<dq>[^\"\r\n]{1,256}+)\"|'(?P<sq>[^'\r\n]{1,256}+)'|(?P<bare>[^\s\"',;}]{1,256}+))",
    re.IGNORECASE | re.ASCII,
)
KEYWORD = re.compile(KEYWORDS, re.IGNORECASE | re.ASCII)

# Keyed by the keyword's first three letters, which tell every keyword apart.
# The patterns are ASCII-only so that case folding cannot match a keyword
# spelled with look-alikes (the long s, the Kelvin sign) that miss this table.
KIND_BY_KEYWORD = {
    "pas": "password",
    "sec": "secret",
    "api": "API key",
    "acc": "access token",
    "aut": "auth token",
    "ref": "refresh token",
    "pri": "private key",
}

# A template's default that says to replace it; a password may really be one (so the
# unit tests refuse password => 'changeme'), a generated key or token never is.
_DEFAULT_VALUES = frozenset(
    ["changeme", "change_me", "change-me", "changeit", "replaceme", "replace_me", "replace-me"]
)

# A bare value stops at "&", which joins a query string's parameters; but in a config
# file (password=D6&XTm^O&*8dA8Wl, become_pass: 7Qf&?+Yiu...) it is part of the value,
# unless what follows it is another parameter (&user=) or an entity (&amp;).
_AMP_REST = re.compile(r"[^\s\"'`,;)\]}]{0,256}+")
_QUERY_PARAM = re.compile(r"&(?:amp;|[A-Za-z_][A-Za-z0-9_.\[\]-]{0,40}+=)")


def bare_value(match: re.Match[str], group: str) -> tuple[str, int, int]:
    """The value of ``group`` and its span, a bare value carried on through "&"."""
    start, end = match.span(group)
    text = match.string
    if group == "bare" and text.startswith("&", end):
        rest = _AMP_REST.match(text, end)
        if rest is not None and _QUERY_PARAM.search(rest.group()) is None:
            end = rest.end()
    return text[start:end], start, end


def assignments(text: str) -> Iterable[tuple[str, tuple[int, int]]]:
    """Yield the kind and value span of every assignment whose value is a secret."""
    pos = 0
    sealed_at = find_seal(text)
    while (match := _ASSIGNMENT.search(text, pos)) is not None:
        group = next(g for g in ("dq", "sq", "bq", "bare") if match.group(g) is not None)
        name = match.group("kw") + match.group("tail")
        before = name_before(text, match.start()).lower()
        value, start, end = bare_value(match, group)
        if (
            not name.lower().endswith(METADATA_SUFFIXES)
            # adminPasswordKey, secretKeys: the key a Secret holds it under (Helm).
            and not (
                match.group("kw")[:3].lower() == "pas" and match.group("tail") in ("Key", "Keys")
            )
            # Helm's existingSecret names a secret that is already there.
            and not before.endswith("existing")
            # Bash's ${API_TOKEN:?message} expands a variable; Vault agent's
            # agent-inject-secret-db: "path" names where a secret is read from.
            and not text.endswith("${", 0, match.start() - len(before))
            and not before.endswith("agent-inject-")
            and not (match.group("kw")[:3].lower() != "pas" and value.lower() in _DEFAULT_VALUES)
            # A command-line flag (--secret=stripe-key, a secret's name in gcloud) is
            # judged like one.
            and (not before.startswith("-") or flag_value_is_secret(value))
            and value_is_secret(value)
            and not in_prose(text, match, group)
            and not assignment_allowed(text, match, group, sealed_at)
        ):
            kind = KIND_BY_KEYWORD[match.group("kw")[:3].lower()]
            # Leave the backslash of an escaped closing quote in place.
            end -= len(value) - len(value.rstrip("\\"))
            yield f"{kind} assignment", (start, end)
            pos = match.end()
        elif value.startswith("{{"):
            # A template ({{ lookup('...', 'secret=path') }}) is read as one, not for
            # the arguments inside it.
            pos = match.end()
        else:
            # The value may itself hold an assignment (a=$X;password=...), so
            # resume inside it; it starts past the keyword, so this advances.
            pos = match.start(group)


def key_values(text: str) -> Iterable[tuple[str, tuple[int, int]]]:
    """Yield the kind and value span of every key/value pair whose value is a secret."""
    for match in _KEY_VALUE.finditer(text):
        name = match.group("name")
        keyword = KEYWORD.search(name)
        group = next(g for g in ("dq", "sq", "bare") if match.group(g) is not None)
        if (
            keyword is not None
            and not name.lower().endswith(METADATA_SUFFIXES)
            and value_is_secret(match.group(group))
        ):
            yield f"{KIND_BY_KEYWORD[keyword.group()[:3].lower()]} assignment", match.span(group)
