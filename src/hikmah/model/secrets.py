"""The credential detector: refuse to persist secrets, withhold them in previews.

Every field a writer controls passes through :func:`check_fields` before a
write, and ledger reports show previews through :func:`redact`. This is a
guard against secrets that merely appeared in a conversation, not a DLP
system: it knows well-known credential shapes, ``NAME=value`` assignments and
passwords named in a sentence, on a command line or in XML.

A text holds a secret when one of these matches:

* A well-known shape: PEM private key headers (not one mentioned in a sentence,
  with words after it on its line and no key), AWS access key ids, GitHub,
  GitLab, Anthropic, OpenAI, Stripe, Slack, Google and ``apikey_<hex>_<hex>``
  keys, JSON Web Tokens and passwords in URLs (``scheme://user:pass@host``).
  Beyond the reference list we also recognise a few shapes that are as
  unambiguous: npm, PyPI, Hugging Face, SendGrid, DigitalOcean, Stripe
  webhook and Google OAuth client secrets, Google OAuth refresh (``1//0...``)
  and access (``ya29.``) tokens, Slack webhook URLs, a ``Bearer`` token (20+
  characters with a letter and a digit, so prose about "the bearer of ..."
  passes), an ``Authorization:`` header with a Basic, Bearer or Token
  credential, and bare base64 after ``auth:`` (``REGISTRY_AUTH=`` too) or
  ``Basic`` that decodes to ``user:password``. A JWT pasted in parts with a
  label before each ("header eyJ...", "payload: eyJ...", "sig ...") counts as
  one.
* Vendor prefixes, each with a fixed or minimum length and a body that has a
  digit or mixed case, so a prefix in prose passes: every GitLab token kind
  (``glpat-``, ``glrt-``, ``gldt-``...), Shopify (``shpat_`` and the other three),
  Postman ``PMAK-``, Databricks ``dapi`` and 32 hex digits, Square ``sq0atp-`` /
  ``sq0csp-``, Brevo ``xkeysib-``, Groq ``gsk_``, Atlassian ``ATATT3``, an Okta
  ``SSWS`` header, age ``AGE-SECRET-KEY-1``, Tailscale ``tskey-auth-`` /
  ``tskey-api-``..., Docker ``dckr_pat_``, the ``sig=`` of an Azure shared access
  signature (with ``sv=``, ``se=`` or another SAS field in the same URL), Discord
  webhook URLs, Telegram bot tokens (``123456789:`` and 35 characters, also in a
  ``/bot<id>:<token>/`` URL), Mailgun
  ``key-``, Mailchimp ``...-us21``, New Relic ``NRAK-``, a Sentry DSN's key,
  Doppler ``dp.st.``, Airtable ``pat...``, Firebase server keys, and a UUID or a
  40-character token a few words after "heroku" or "cloudflare"/``CF_`` (unless
  the words make it an id), Prefect ``pnu_``, Yandex ``y0_``, Asana
  ``1/<id>/<id>:<32 hex>``, a LaunchDarkly ``sdk-``/``api-``/``mob-`` UUID near
  "launchdarkly", the secret of ``confluent api-key store KEY SECRET``, Microsoft
  Teams (``webhook.office.com/webhookb2/...``) and Mattermost (``/hooks/<26>``)
  webhook URLs, the password of Oracle's ``jdbc:oracle:thin:user/pass@``, 32 hex
  digits after ``master.key`` (Rails), and a session cookie's value (sessionid,
  session, ``*_session``, connect.sid, PHPSESSID, JSESSIONID; 20+ characters with
  4+ letters and 4+ digits, so ``session=deleted`` passes). A Slack token needs a
  digit (``xoxb-your-bot-token-here`` passes). A match that holds a mask or filler (8+ ``x``, 4+
  ``*`` or ``•``: ``sk_live_xxxxxxxx``, ``AGE-SECRET-KEY-1XXXX``) is an example.
* Credential files and connection strings: base64 of a PEM private key (a
  Kubernetes ``tls.key``; a certificate decodes to no private key and passes),
  the private lines of a PuTTY key, Azure ``AccountKey=`` and
  ``SharedAccessKey=``, ``.netrc`` entries (``machine HOST login USER password
  PASS``), ``.pgpass`` lines (``host:port:db:user:password``, a whole line whose
  password has a digit, a symbol or both cases), the ``auth`` of a docker config
  (base64 that decodes to ``user:password``), Discord bot tokens (the first part
  decodes to a numeric id), HashiCorp Vault tokens, a Twilio account SID
  with a 32-hex auth token within a few lines of it, and a Go DSN without a
  scheme (``user:pass@tcp(host)/db``). A password in a URL, a DSN or ``.netrc``
  may start with any symbol (``*Y1Od...``, ``%qhrd...``); only a template
  (``$VAR``, ``${VAR}``, ``{{ x }}``, ``<password>``, ``%VAR%``), a reference
  (``vault:``...), a mask, an uppercase placeholder (``USER:PASSWORD``) or a
  credential's name (``user:password@``) is no password.
* A command line: ``user:password`` after ``-u``, ``--user``, ``-a`` or
  ``--auth`` on the line of an HTTP client (curl, wget, HTTPie, xh) and not
  after a ``|``, ``;`` or ``&``; a credential flag (a name ending in password,
  pass, passphrase, pwd, secret, token, or api/app/access/secret/private/
  client/auth key, after ``-`` or ``--``) and its value after a space or ``=``
  (``--client-secret X``, ``-passout pass:X``). The value must read as a
  password (below, not strict) and be no other flag, no ``k=v`` list
  (``--secret id=npmrc,src=.npmrc``) and no placeholder. Short password flags
  count after their command on the same line: ``-p`` of mysql, mariadb,
  mysqldump and the like (``-pX``; ``-p X`` only when X reads as a password
  strictly, since ``mysql -p dbname`` prompts) and of sshpass, ``-a`` of
  redis-cli; also the password of ``net use ... /user:X``, the string given to
  PowerShell's ``ConvertTo-SecureString ... -AsPlainText``, and the last argument
  of ``htpasswd -b``; ``-P`` of sqlcmd, bcp and osql, ``-w`` of the OpenLDAP
  clients (ldapsearch...), the password of ``smbclient -U user%X``; and a value
  quoted after ``=`` may start with ``-`` (``--password='-B_q...'``).
* A call: a first string argument that names a credential and a second that is
  its value (PHP ``define('DB_PASSWORD', '...')``, ``set("api_token", "...")``),
  judged like an assignment of that name; the third string argument of a
  connection call (``new PDO(dsn, user, 'X')``, ``getConnection(url, user, "X")``,
  ``mysqli_connect``) unless it is a template, placeholder or code.
* A password named in prose: ``password`` (passwd, passphrase, passcode, pw,
  pwd) with up to six words of context, a verb (is, was, changed to...) or a
  colon, then a value ("the wifi password is hunter2!42"); ``password VALUE``
  with no verb ("ssh deploy@host with password Winter2024!"); a login pair
  ("login is admin / Sup3rS3cret!"), or after use, try, creds or credentials
  ("use admin / Adm1n!2025"); a ``user / password`` pair with no verb whose
  password has a letter, a digit and a symbol ("keycloak admin / K3ycl0ak!Adm");
  ``-p VALUE`` on a ``login`` command line; ``pass VALUE`` with a strict value
  ("user x, pass .Zqe..."); and the same in German (Passwort, Kennwort: ist, war,
  lautet), French (mot de passe: est), Spanish (contraseña: es, era), Portuguese
  (senha: é, foi), Italian (password: è) and Russian (пароль), Dutch (wachtwoord:
  is), Polish (hasło: to, jest), Turkish (şifre/şifresi, parola/parolası) and
  Japanese (パスワード: は, が), context words in any letters; and with no verb, at
  most a colon ("Kennwort X", "mdp : X", "clave X", parola, wachtwoord, lösenord,
  hasło, şifre, and English "password X"), when X
  reads as a password strictly or is 10+ letters mixing cases at random (not
  CamelCase or capitals: ``fzGOABJwkwqcgcyNb``, ``CPtHCLStjb-Hpy``). The value
  may follow the verb or colon on the next line.
  "password: VALUE" with words
  before it ("new ssh password: 7Seas&Salt") is judged strictly (a letter, a
  digit, and a symbol or both cases).
  The value must read as a password: a letter, a digit and a symbol or both
  cases, or 8+ characters with a letter and a digit or symbol; and it must not
  be a reference, a placeholder, a path, a URL, an e-mail address, a date, code,
  a description or technical words (``sha256-hashed``, ``16-chars``). Context
  that makes the sentence about something else (the password's hash, policy,
  length, reset, field...) leaves it alone.
* An assignment: a name containing password, passwd, passphrase, secret,
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
* A name built around a credential word: any ``NAME = value`` (``=``, ``:``,
  ``:=``, ``=>``; ``.env``, ``export``, YAML, JSON, TOML, INI) whose name has, as a
  ``_``/``-``/``.``/camel-case word, token, key, psk, auth, secret, password,
  passwd, passphrase, pass or pwd (``PAGERDUTY_TOKEN``, ``ansible_become_pass``,
  ``"pass"``, rclone's ``key``, ``SNOWSQL_PWD``), with no word after it that makes
  the name about the credential (``_id``, ``_type``, ``_ttl``, ``_path``...) and no
  word before a token or key that makes it a key of data (primary, sort, cache,
  public, next/page, csrf...; for a one-word name, the word before it in the text
  counts: "cache key: ..."). A password word's value passes the assignment test
  (pass and pwd also the prose one); a token, key or auth value must look random:
  16+ characters, no space, no ``=`` inside, random as a named token must be
  (below), or three character classes with a digit, or high entropy. A bare
  ``key: <hex>`` also needs mixed case; an ``auth`` whose value is base64 of
  text is left to the docker and basic-auth shapes.
* A named token: such a name, or ``token``, ``pat``, ``psk`` or an app/access/
  secret/master/(pre-)shared key,
  with up to four words and ``is``/``was``, a colon, ``=`` or only a space
  before a long random value ("datadog api key 55bd51f0...",
  "AWS_SECRET_ACCESS_KEY is MJ8P..."): 16+ characters mixing cases and digits,
  20+ hex digits, or 24+ lowercase letters and 4+ digits. A value starting with
  a known token prefix is left to its shape; words that make it about
  something else ("the password digest is ...", "api key id ...") leave it;
  ``=`` or ``:`` needs no space after it (``NOTION_TOKEN=secret_...``), and up to
  eight context words may carry brackets and commas.

Detection reads the text as written and, when it differs, a normalised copy:
each non-ASCII character in NFKC form (fullwidth letters become ASCII),
invisible characters dropped (Unicode format characters, category Cf, such as
the zero-width space and joiners, and the other default-ignorable ones),
Cyrillic and Greek letters drawn like Latin ones folded to them, and a token
that starts with a known prefix (``eyJ``, ``ghp_``, ``AKIA``...) joined across
the spaces or line breaks that split it, as long as the pieces are not words;
and a run of 16 or more single characters each followed by a space ("g h p _
E E h V ...") joined.
What is stored is never changed; :func:`redact` maps what it finds in the copy
back to the span of the original text it came from. Pure ASCII text with no
prefixed token followed by whitespace costs one scan and no copy. Each shape
first checks for a fixed substring every match contains (``ghp_``, ``://``),
so most texts skip most scans.

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

Every pattern runs in linear time: quantifiers are bounded or possessive, no
quantified group can match the same text two ways, and each unbounded token
pattern starts with a lookbehind that excludes its own alphabet, so a run of
token characters is scanned from its first character only. The lazy gaps
(the context before a password or a named token, the text between a Twilio
SID and its token) are bounded, so each candidate costs a constant. Where a
shape needs context that a pattern would reach by a long gap (the HTTP client
before a ``-u``, mysql before a ``-p``), the pattern finds the short part and a
check looks back at most 200 characters; likewise at most 600 characters of the
URL around an Azure ``sig=``, 60 before a Heroku or Cloudflare value and 40 of a
name before its keyword. A ``NAME = value`` candidate is any name (scanned from
its first character, its lookbehind excluding its alphabet) whose lowercase form
contains a credential word's letters; its words are judged in Python. A scan
that skips a rejected candidate resumes inside it, never before its start.
"""

from __future__ import annotations

import base64
import binascii
import functools
import math
import re
import unicodedata
from bisect import bisect_right
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

from hikmah.model import _needles
from hikmah.model.errors import SecretDetected

__all__ = ["check_fields", "find_secret", "preview", "redact"]

_WITHHELD = "[withheld]"
# The text around a withheld value can read as a new credential once the marker is in
# (in s://PASSWORD=[withheld];:s@D the marker sits in a URL's user part), so redaction
# runs again on its own output; a text still flagged after these passes goes whole.
_REDACT_PASSES = 3
PREVIEW_CHARS = 80
# Control, format (bidi overrides among them) and line-break characters could
# rearrange or split a preview on a terminal; a preview shows them as spaces.
_UNPRINTABLE = frozenset({"Cc", "Cf", "Zl", "Zp"})

_MIN_VALUE = 8
# A value in prose as short as "L4bR4t!" still reads as a password when it
# mixes letters, digits and symbols or cases.
_MIN_PROSE_VALUE = 6

_DIGIT = re.compile(r"[0-9]")
_LOWER = re.compile(r"[a-z]")
_UPPER = re.compile(r"[A-Z]")


def _has_digit(text: str) -> bool:
    return _DIGIT.search(text) is not None


def _bearer_like(match: re.Match[str]) -> bool:
    token = match.group("secret")
    return _has_digit(token) and (_LOWER.search(token) or _UPPER.search(token)) is not None


def _header_credential(match: re.Match[str]) -> bool:
    # Base64 of user:pass nearly always has a digit, padding or mixed case;
    # "Authorization: Basic credentials" in prose has none of them.
    token = match.group("secret")
    mixed = _LOWER.search(token) is not None and _UPPER.search(token) is not None
    return _has_digit(token) or "=" in token or mixed


def _secret_has_digit(match: re.Match[str]) -> bool:
    return _has_digit(match.group("secret"))


def _mixed_case(match: re.Match[str]) -> bool:
    token = match.group("secret")
    return _LOWER.search(token) is not None and _UPPER.search(token) is not None


def _url_password(match: re.Match[str]) -> bool:
    # user:password@host in documentation names the parts; USER:PASSWORD likewise.
    secret = match.group("secret")
    return (
        not _is_template(secret)
        and _PLACEHOLDER.fullmatch(secret) is None
        and not _names_a_credential(secret)
    )


def _b64decode(token: str) -> bytes | None:
    """Standard or URL-safe base64, padding optional; None when it is not base64."""
    token = token.rstrip("=").replace("-", "+").replace("_", "/")
    try:
        return base64.b64decode(token + "=" * (-len(token) % 4), validate=True)
    except binascii.Error:
        return None


def _pem_in_base64(match: re.Match[str]) -> bool:
    # A certificate (tls.crt) is base64 of a PEM block too, and public.
    head = _b64decode(match.group(0)[:80])
    return head is not None and _PEM_BEGIN.match(head.decode("ascii", "replace")) is not None


def _azure_key(match: re.Match[str]) -> bool:
    return _has_digit(match.group("secret")) and _mixed_case(match)


def _registry_auth(match: re.Match[str]) -> bool:
    """A docker config ``auth`` is base64 of ``user:password``."""
    raw = _b64decode(match.group("secret"))
    if raw is None:
        return False
    try:
        user, sep, password = raw.decode("utf-8").partition(":")
    except UnicodeDecodeError:
        return False
    return bool(sep and user and password) and password.isprintable()


def _discord_token(match: re.Match[str]) -> bool:
    # The first part is the bot's user id (a snowflake) in base64.
    raw = _b64decode(match.group("id"))
    return raw is not None and raw.isdigit() and 17 <= len(raw) <= 20


def _netrc_password(match: re.Match[str]) -> bool:
    secret = match.group("secret")
    return not _is_template(secret) and _PLACEHOLDER.fullmatch(secret) is None


def _pgpass_line(match: re.Match[str]) -> bool:
    # Five colon-separated fields also make log lines and Redis keys
    # (worker:10:queue:default:started); a password has a digit, a symbol or
    # both cases, and a host has a letter, a dot or is *.
    host, value = match.group("host"), match.group("secret")
    return (
        (_LETTER.search(host) is not None or "." in host or host == "*")
        and not _is_placeholder(value)
        and not value.isdigit()
        and (_has_digit(value) or _SYMBOL.search(value) is not None or _mixed_case(match))
    )


def _basic_credential(match: re.Match[str]) -> bool:
    """Bare base64 after ``auth:`` or ``Basic``: it must decode to ``user:password``
    in printable ASCII, with no space in the user."""
    raw = _b64decode(match.group("secret"))
    if raw is None or not raw.isascii():
        return False
    user, sep, password = raw.decode("ascii").partition(":")
    return bool(sep and user and password) and (user + password).isprintable() and " " not in user


# An HTTP client's command, which a -u/--user/-a/--auth flag must follow on its line.
_HTTP_CLIENT = re.compile(r"(?<![A-Za-z0-9_-])(?:curl|wget|https?+|xhs?+)[ \t]")
_CLIENT_REACH = 200


def _client_password(match: re.Match[str]) -> bool:
    """``user:password`` after -u, --user, -a or --auth on an HTTP client's command
    line (curl, wget, HTTPie, xh), not piped or chained from an earlier command."""
    text, start = match.string, match.start()
    window = text[max(0, start - _CLIENT_REACH) : start]
    window = window[window.rfind("\n") + 1 :]
    commands = [command.end() for command in _HTTP_CLIENT.finditer(window)]
    return (
        bool(commands)
        and not any(separator in window[commands[-1] :] for separator in "|;&")
        and _flag_value_is_secret(match.group("secret"))
    )


def _labelled_jwt(match: re.Match[str]) -> bool:
    signature = match.group("sig")
    return _has_digit(signature) or (
        _LOWER.search(signature) is not None and _UPPER.search(signature) is not None
    )


def _random_secret(match: re.Match[str]) -> bool:
    """A vendor token's body: mixes cases or has a digit, so a name or prose does not."""
    token = match.group("secret")
    return _has_digit(token) or (
        _LOWER.search(token) is not None and _UPPER.search(token) is not None
    )


def _mixed_and_digit(match: re.Match[str]) -> bool:
    return _has_digit(match.group("secret")) and _mixed_case(match)


_SAS_REACH = 600
_SAS_FIELD = re.compile(r"[?&;](?:sv|se|sp|sr|spr|st|srt|ss)=")


def _sas_signature(match: re.Match[str]) -> bool:
    """``sig=`` of an Azure shared access signature: other SAS fields (``sv=``, ``se=``)
    sit in the same URL or query, with no whitespace between."""
    text = match.string
    window = text[max(0, match.start() - _SAS_REACH) : match.start()]
    before = "" if not window or window[-1].isspace() else window.rsplit(None, 1)[-1]
    after = _NO_SPACE.match(text, match.end(), match.end() + _SAS_REACH)
    query = before + (after.group() if after else "")
    return _SAS_FIELD.search(query) is not None and _has_digit(match.group("secret"))


_NO_SPACE = re.compile(r"\S*+")


def _oracle_password(match: re.Match[str]) -> bool:
    secret = match.group("secret")
    return (
        not _is_template(secret)
        and not _is_placeholder(secret)
        and (_has_digit(secret) or _SYMBOL.search(secret) is not None or _mixed_case(match))
    )


def _session_value(match: re.Match[str]) -> bool:
    """A session id: random (a digit and a letter, and mixed case, 20+ hex or base36
    with digits), not a placeholder or a name."""
    value = match.group("secret")
    letters = sum(char.isalpha() for char in value)
    digits = sum(char.isdigit() for char in value)
    return (
        letters >= 4
        and digits >= 4
        and not _is_placeholder(value)
        and _ALPHABET_RUN not in value.lower()
        and _MASK_RUN.search(value) is None
    )


_CONTEXT_REACH = 60


def _near_vendor(*names: str) -> Callable[[re.Match[str]], bool]:
    """Accept a bare random value only when a vendor's name is a few words before it
    and the words between do not make it an id."""

    def accept(match: re.Match[str]) -> bool:
        before = match.string[max(0, match.start() - _CONTEXT_REACH) : match.start()].lower()
        hits = [before.rfind(name) for name in names]
        first = max(hits)
        if first == -1:
            return False
        between = set(_WORD_SPLIT.split(re.sub(r"[^a-z0-9_ -]", " ", before[first:])))
        return not _ABOUT_THE_TOKEN.intersection(between)

    return accept


_near_cloudflare = _near_vendor("cloudflare", "cf_", "cf-")


@dataclass(frozen=True, slots=True)
class _Shape:
    """A well-known credential shape.

    Attributes:
        label: What the refusal calls it.
        pattern: Finds candidates; a group named ``secret``, when present, is
            the span :func:`redact` withholds (otherwise the whole match).
        accept: Further test of a candidate the pattern alone cannot express.
        needles: Substrings one of which every match contains, checked first
            so that a text without any skips the scan (in lowercase when the
            pattern ignores case; :class:`_NeedleTable`); empty for a shape without
            one.
    """

    label: str
    pattern: re.Pattern[str]
    accept: Callable[[re.Match[str]], bool] | None = None
    needles: tuple[str, ...] = ()
    # Whether the needles are looked for in the lowercased text (the pattern ignores
    # case); kept apart from the pattern's flags, whose enum arithmetic is slow.
    folded: bool = False


def _shape(
    label: str,
    pattern: str,
    accept: Callable[[re.Match[str]], bool] | None = None,
    flags: int = 0,
    needles: tuple[str, ...] = (),
) -> _Shape:
    return _Shape(label, re.compile(pattern, flags), accept, needles, bool(flags & re.IGNORECASE))


_PEM_BEGIN = re.compile(r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----")
_PEM_END = re.compile(r"-----END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----")

# What may stand between the parts of a JWT pasted with labels: spaces, a line
# break, and a label of a word or two closed by a colon or spaces.
_JWT_GAP = (
    r"[ \t]{0,8}+(?:\r?\n[ \t]{0,8}+)?+"
    r"(?:[A-Za-z][A-Za-z0-9_-]{0,19}+(?:[ \t][A-Za-z0-9_-]{1,20}+)?"
    r"(?:[ \t]{0,3}+[:=][ \t]{0,8}+|[ \t]{1,8}+))?"
)

# Order matters only for the label: the more specific shape goes first
# (sk-ant- before the generic OpenAI sk-).
_PEM = _Shape("private key", _PEM_BEGIN, needles=("PRIVATE KEY",))
_SHAPES: tuple[_Shape, ...] = (
    _PEM,
    # base64 of "-----BEGIN", as in a Kubernetes secret's tls.key.
    _shape(
        "private key",
        r"(?<![A-Za-z0-9+/])LS0tLS1CRUdJTi[A-Za-z0-9+/]{16,}+={0,2}",
        _pem_in_base64,
        needles=("LS0tLS1CRUdJTi",),
    ),
    # A PuTTY key file's private part: the lines after "Private-Lines: N".
    _shape(
        "private key",
        r"Private-Lines:[ \t]*+[0-9]{1,4}+[ \t]*+\r?\n[ \t]{0,8}+"
        r"(?P<secret>[A-Za-z0-9+/=]{16,256}+"
        r"(?:\r?\n[ \t]{0,8}+[A-Za-z0-9+/=]{1,256}+(?![^\r\n])){0,256}+)",
        needles=("Private-Lines:",),
    ),
    _shape(
        "AWS access key",
        r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])",
        needles=("AKIA", "ASIA"),
    ),
    _shape(
        "GitHub token",
        r"(?<![A-Za-z0-9_])gh[pousr]_[A-Za-z0-9]{30,}+",
        needles=("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    ),
    _shape(
        "GitHub token",
        r"(?<![A-Za-z0-9_])github_pat_[A-Za-z0-9_]{40,}+",
        needles=("github_pat_",),
    ),
    _shape(
        "GitLab token",
        r"(?<![A-Za-z0-9_-])gl(?:pat|rt|dt|ptt|ft|cbt|soat|agent|oas)-(?P<secret>[A-Za-z0-9_-]{20,}+)",
        _random_secret,
        needles=(
            "glpat-",
            "glrt-",
            "gldt-",
            "glptt-",
            "glft-",
            "glcbt-",
            "glsoat-",
            "glagent-",
            "gloas-",
        ),
    ),
    _shape(
        "Anthropic API key",
        r"(?<![A-Za-z0-9_-])sk-ant-[A-Za-z0-9_-]{20,}+",
        needles=("sk-ant-",),
    ),
    _shape(
        "OpenAI API key",
        r"(?<![A-Za-z0-9_-])sk-(?:proj-)?(?P<secret>[A-Za-z0-9_-]{32,}+)",
        _secret_has_digit,
        needles=("sk-",),
    ),
    _shape(
        "Stripe key",
        r"(?<![A-Za-z0-9_])[sr]k_live_[A-Za-z0-9]{16,}+",
        needles=("k_live_",),
    ),
    _shape(
        "Stripe webhook secret",
        r"(?<![A-Za-z0-9_])whsec_[A-Za-z0-9]{24,}+",
        needles=("whsec_",),
    ),
    # A Slack token holds its workspace's and bot's numeric ids, so a placeholder spelled
    # in words (xoxb-your-bot-token-here) has no digit and passes.
    _shape(
        "Slack token",
        r"(?<![A-Za-z0-9_-])xox[abprs]-(?P<secret>[A-Za-z0-9-]{10,}+)",
        _secret_has_digit,
        needles=("xox",),
    ),
    _shape(
        "Slack webhook",
        r"https://hooks\.slack\.com/services/[A-Za-z0-9]{1,64}+/[A-Za-z0-9]{1,64}+"
        r"/[A-Za-z0-9]{16,}+",
        needles=("hooks.slack.com",),
    ),
    _shape(
        "Google API key",
        r"(?<![A-Za-z0-9_-])AIza[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])",
        needles=("AIza",),
    ),
    _shape(
        "Google OAuth client secret",
        r"(?<![A-Za-z0-9_-])GOCSPX-[A-Za-z0-9_-]{28,}+",
        needles=("GOCSPX-",),
    ),
    _shape(
        "API key",
        r"(?<![A-Za-z0-9])apikey_[0-9a-fA-F]{32,}+_[0-9a-fA-F]{32,}+",
        needles=("apikey_",),
    ),
    _shape("npm token", r"(?<![A-Za-z0-9_])npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])", needles=("npm_",)),
    _shape(
        "PyPI token",
        r"(?<![A-Za-z0-9_-])pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{40,}+",
        needles=("pypi-",),
    ),
    # Real Hugging Face tokens mix cases; a long snake_case identifier does not.
    _shape(
        "Hugging Face token",
        r"(?<![A-Za-z0-9_])hf_(?P<secret>[A-Za-z0-9]{34,}+)",
        _mixed_case,
        needles=("hf_",),
    ),
    _shape(
        "SendGrid key",
        r"(?<![A-Za-z0-9_.-])SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}",
        needles=("SG.",),
    ),
    _shape(
        "DigitalOcean token",
        r"(?<![A-Za-z0-9_])do[por]_v1_[a-f0-9]{64}",
        needles=("_v1_",),
    ),
    _shape(
        "Vault token",
        r"(?<![A-Za-z0-9_.-])hv[sb]\.[A-Za-z0-9_-]{24,}+",
        needles=("hvs.", "hvb."),
    ),
    # Vendor tokens with a distinctive prefix; each body has a fixed length or a
    # minimum one, and a digit or mixed case, so a word after the prefix is prose.
    _shape(
        "Shopify token",
        r"(?<![A-Za-z0-9_])shp(?:at|ca|pa|ss)_(?P<secret>[a-fA-F0-9]{32})(?![A-Za-z0-9])",
        needles=("shpat_", "shpca_", "shppa_", "shpss_"),
    ),
    _shape(
        "Postman API key",
        r"(?<![A-Za-z0-9_-])PMAK-[A-Za-z0-9]{24}-(?P<secret>[A-Za-z0-9]{30,40}+)",
        _random_secret,
        needles=("PMAK-",),
    ),
    _shape(
        "Databricks token",
        r"(?<![A-Za-z0-9_-])dapi(?P<secret>[a-f0-9]{32})(?:-[0-9])?(?![A-Za-z0-9])",
        _random_secret,
        needles=("dapi",),
    ),
    _shape(
        "Square token",
        r"(?<![A-Za-z0-9_-])sq0(?:atp|csp|idp)-(?P<secret>[A-Za-z0-9_-]{22,}+)",
        _random_secret,
        needles=("sq0atp-", "sq0csp-", "sq0idp-"),
    ),
    _shape(
        "Brevo key",
        r"(?<![A-Za-z0-9_-])x(?:keysib|smtpsib)-[a-f0-9]{64}-(?P<secret>[A-Za-z0-9]{16})",
        needles=("xkeysib-", "xsmtpsib-"),
    ),
    _shape(
        "Groq API key",
        r"(?<![A-Za-z0-9_])gsk_(?P<secret>[A-Za-z0-9]{40,}+)",
        _random_secret,
        needles=("gsk_",),
    ),
    _shape(
        "Atlassian API token",
        r"(?<![A-Za-z0-9_-])ATATT3(?P<secret>[A-Za-z0-9_=-]{60,}+)",
        _random_secret,
        needles=("ATATT3",),
    ),
    _shape(
        "Okta API token",
        r"(?<![A-Za-z0-9_-])SSWS[ \t]{1,5}+(?P<secret>[A-Za-z0-9_-]{30,}+)",
        _mixed_and_digit,
        needles=("SSWS",),
    ),
    _shape(
        "age secret key",
        r"(?<![A-Za-z0-9_-])AGE-SECRET-KEY-1(?P<secret>[A-Z0-9]{50,}+)",
        needles=("AGE-SECRET-KEY-1",),
    ),
    _shape(
        "Tailscale key",
        r"(?<![A-Za-z0-9_-])tskey-(?:auth|api|client|scim|webhook)-[A-Za-z0-9]{6,}+-"
        r"(?P<secret>[A-Za-z0-9]{20,}+)",
        _random_secret,
        needles=("tskey-",),
    ),
    _shape(
        "Docker token",
        r"(?<![A-Za-z0-9_-])dckr_(?:pat|oat)_(?P<secret>[A-Za-z0-9_-]{24,}+)",
        _random_secret,
        needles=("dckr_",),
    ),
    _shape(
        "Azure SAS signature",
        r"(?<![A-Za-z0-9_])sig=(?P<secret>[A-Za-z0-9%+/=_-]{30,256}+)",
        _sas_signature,
        needles=("sig=",),
    ),
    _shape(
        "Discord webhook",
        r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/[0-9]{17,20}+"
        r"/(?P<secret>[A-Za-z0-9_-]{40,}+)",
        needles=("/api/webhooks/",),
    ),
    _shape(
        "Telegram bot token",
        r"(?:(?<![A-Za-z0-9_:-])|(?<=/bot))[0-9]{8,10}+:(?P<secret>[A-Za-z0-9_-]{35})"
        r"(?![A-Za-z0-9_-])",
        _mixed_and_digit,
        needles=(":",),
    ),
    _shape(
        "Mailgun key",
        r"(?<![A-Za-z0-9_-])key-(?P<secret>[0-9a-z]{32})(?![A-Za-z0-9])",
        _secret_has_digit,
        needles=("key-",),
    ),
    _shape(
        "Mailchimp key",
        r"(?<![A-Za-z0-9_-])(?P<secret>[0-9a-f]{32})-us[0-9]{1,2}(?![A-Za-z0-9])",
        _random_secret,
        needles=("-us",),
    ),
    _shape(
        "New Relic key",
        r"(?<![A-Za-z0-9_-])NR(?:AK|AA|II|IQ|JS|RA|SP)-(?P<secret>[A-Z0-9]{27})(?![A-Za-z0-9])",
        _random_secret,
        needles=("NRAK-", "NRAA-", "NRII-", "NRIQ-", "NRJS-", "NRRA-", "NRSP-"),
    ),
    _shape(
        "Sentry DSN",
        r"https?://(?P<secret>[0-9a-f]{32})(?::[0-9a-f]{32})?@[A-Za-z0-9.-]{1,200}+"
        r"(?::[0-9]{1,5}+)?/[0-9]{1,20}+(?![A-Za-z0-9])",
        needles=("://",),
    ),
    _shape(
        "Doppler token",
        r"(?<![A-Za-z0-9_.-])dp\.(?:st|ct|pt|sa|scim|audit)\.(?:[a-z0-9_-]{1,40}+\.)?"
        r"(?P<secret>[A-Za-z0-9]{40,}+)",
        _random_secret,
        needles=("dp.",),
    ),
    _shape(
        "Airtable token",
        r"(?<![A-Za-z0-9_])pat[A-Za-z0-9]{14}\.(?P<secret>[a-f0-9]{64})",
        needles=("pat",),
    ),
    _shape(
        "Firebase server key",
        r"(?<![A-Za-z0-9_-])AAAA[A-Za-z0-9_-]{7}:(?P<secret>APA91b[A-Za-z0-9_-]{100,}+)",
        needles=(":APA91b",),
    ),
    _shape(
        "Heroku API key",
        r"(?<![A-Za-z0-9-])(?P<secret>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})"
        r"(?![A-Za-z0-9-])",
        _near_vendor("heroku"),
        re.IGNORECASE,
        needles=("heroku",),
    ),
    _shape(
        "Cloudflare token",
        r"(?<![A-Za-z0-9_-])(?P<secret>[A-Za-z0-9_-]{37,40})(?![A-Za-z0-9_-])",
        lambda match: _mixed_and_digit(match) and _near_cloudflare(match),
        needles=("cloudflare", "cf_", "cf-"),
    ),
    # A Go DSN has no scheme: user:password@tcp(host:port)/db.
    _shape(
        "password in DSN",
        r"(?<![A-Za-z0-9_.:/@-])[A-Za-z0-9_.-]{1,64}+:(?P<secret>[^\s@/\"'`]{1,256}+)"
        r"@(?:tcp|udp|unix)\(",
        _url_password,
        needles=("@tcp(", "@udp(", "@unix("),
    ),
    # Connection strings of Azure Storage and Service Bus / Event Hubs.
    _shape(
        "Azure key",
        r"(?<![A-Za-z0-9])(?:Account|SharedAccess)Key[ \t]{0,3}+=[ \t]{0,3}+"
        r"(?P<secret>[A-Za-z0-9+/]{30,}+=*+)",
        _azure_key,
        re.IGNORECASE | re.ASCII,
        needles=("accountkey", "sharedaccesskey"),
    ),
    # "auths" in ~/.docker/config.json: base64 of user:password.
    _shape(
        "registry credential",
        r"\\?\"auth\\?\"[ \t]{0,5}+:[ \t\r\n]{0,20}+"
        r"\\?\"(?P<secret>[A-Za-z0-9+/]{8,1024}+={0,2})\\?\"",
        _registry_auth,
        needles=('"auth',),
    ),
    # An HTTP client's user:password: curl -u, --user; httpie -a, --auth; wget --user.
    _shape(
        "password on a command line",
        r"(?<![A-Za-z0-9_-])(?:-u|-a|--user|--auth|--proxy-user|--http-user|-U)"
        r"(?:[ \t]{1,3}+|=)?+[\"']?+[^\s:\"'$]{1,64}+:(?P<secret>[^\s\"']{1,256}+)",
        _client_password,
        needles=("curl", "wget", "http", "xh"),
    ),
    # Google OAuth refresh tokens ("1//0...") and access tokens ("ya29.").
    _shape(
        "Google OAuth token",
        r"(?<![A-Za-z0-9_/-])1//0[A-Za-z0-9_-]{30,}+",
        needles=("1//0",),
    ),
    _shape(
        "Google OAuth token",
        r"(?<![A-Za-z0-9_.-])ya29\.(?P<secret>[A-Za-z0-9_-]{30,}+)",
        _mixed_case,
        needles=("ya29.",),
    ),
    _shape(
        "Discord bot token",
        r"(?<![A-Za-z0-9_-])(?P<id>[MNO][A-Za-z0-9_-]{22,27})\.[A-Za-z0-9_-]{6}\."
        r"[A-Za-z0-9_-]{27,40}(?![A-Za-z0-9_-])",
        _discord_token,
    ),
    # An account SID alone names the account; next to a 32-hex auth token
    # (either way round, within a few lines) the pair signs in.
    _shape(
        "Twilio credentials",
        r"(?<![A-Za-z0-9])AC[0-9a-f]{32}(?![A-Za-z0-9])(?s:.){0,300}?"
        r"(?<![A-Za-z0-9])(?P<secret>[0-9a-f]{32})(?![A-Za-z0-9])",
        needles=("AC",),
    ),
    _shape(
        "Twilio credentials",
        r"(?<![A-Za-z0-9])(?P<secret>[0-9a-f]{32})(?![A-Za-z0-9])(?s:.){0,300}?"
        r"(?<![A-Za-z0-9])AC[0-9a-f]{32}(?![A-Za-z0-9])",
        needles=("AC",),
    ),
    _shape(
        "JSON Web Token",
        r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{5,}+\.eyJ[A-Za-z0-9_-]{5,}+\.[A-Za-z0-9_-]*+",
        needles=("eyJ",),
    ),
    # A JWT pasted in parts with a label before each ("header eyJ...", "payload:
    # eyJ...", "sig ..."); a label is a word or two, then spaces or a colon.
    _shape(
        "JSON Web Token",
        r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{5,}+\.?+" + _JWT_GAP + r"\.?+"
        r"eyJ[A-Za-z0-9_-]{5,}+\.?+" + _JWT_GAP + r"\.?+(?P<sig>[A-Za-z0-9_-]{16,}+)",
        _labelled_jwt,
        needles=("eyJ",),
    ),
    # The user part stops at ':' and the password at '@', so both can be
    # possessive; an empty password (redis://:@host) is no password.
    _shape(
        "password in URL",
        r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,30}+://[^\s/?#@:]{0,256}+"
        # A password may hold "#" (mysql://root:#Zq8x@db), never "/", "?" or "@".
        r":(?P<secret>[^\s/?@]{1,256}+)@(?=[A-Za-z0-9\[])",
        _url_password,
        needles=("://",),
    ),
    # ~/.netrc: "machine HOST login USER password PASS", on one line or several.
    _shape(
        "netrc password",
        # "default" alone is too common a word: only "default login USER" counts.
        r"(?<![A-Za-z0-9_-])(?:machine[ \t]++[^\s]{1,256}+"
        r"(?:\s{1,20}+(?:login|account)[ \t]++[^\s]{1,256}+)?"
        r"|default\s{1,20}+login[ \t]++[^\s]{1,256}+)"
        r"\s{1,20}+password[ \t]++(?P<secret>[^\s]{1,256}+)",
        _netrc_password,
        needles=("machine", "default"),
    ),
    # ~/.pgpass: a whole line of host:port:database:user:password.
    _shape(
        "pgpass password",
        r"^[ \t]{0,8}+(?P<host>[A-Za-z0-9._*-]{1,253}+):(?:[0-9]{2,5}+|\*)"
        r":[^:\s]{1,128}+:[^:\s]{1,128}+:(?P<secret>[^\s]{1,256}+)[ \t]{0,8}+$",
        _pgpass_line,
        re.MULTILINE,
    ),
    _shape(
        "authorization header",
        r"authorization[\"']?[ \t]{0,5}+[:=][ \t]{0,5}+[\"']?(?:basic|bearer|token)[ \t]{1,5}+"
        r"(?P<secret>[A-Za-z0-9._~+/-]{8,1024}+=*+)",
        _header_credential,
        re.IGNORECASE | re.ASCII,
        needles=("authorization",),
    ),
    _shape(
        "bearer token",
        r"(?<![A-Za-z0-9_-])bearer[ \t]{1,5}+(?P<secret>[A-Za-z0-9._~+/-]{20,1024}+=*+)",
        _bearer_like,
        re.IGNORECASE | re.ASCII,
        needles=("bearer",),
    ),
    # The same base64 of user:password bare ("auth: YWRt...") or after "Basic"
    # without an Authorization header.
    _shape(
        "basic auth credential",
        r"(?<![A-Za-z0-9-])(?:auth|basic)[\"']?+(?:[ \t]{0,5}+[:=][ \t]{0,5}+|[ \t]{1,5}+)[\"']?+"
        r"(?P<secret>[A-Za-z0-9+/]{8,1024}+={0,2}+)(?![A-Za-z0-9+/=_-])",
        _basic_credential,
        re.IGNORECASE | re.ASCII,
        needles=("auth", "basic"),
    ),
    _shape(
        "Prefect API key",
        r"(?<![A-Za-z0-9_])pnu_(?P<secret>[A-Za-z0-9]{36})(?![A-Za-z0-9])",
        _random_secret,
        needles=("pnu_",),
    ),
    _shape(
        "Yandex OAuth token",
        r"(?<![A-Za-z0-9_])y0_(?P<secret>[A-Za-z0-9_-]{40,}+)",
        _mixed_and_digit,
        needles=("y0_",),
    ),
    # An Asana personal access token: 1/<user id>/<token id>:<32 hex>.
    _shape(
        "Asana token",
        r"(?<![A-Za-z0-9/])[0-9]/[0-9]{10,20}+/[0-9]{10,20}+:(?P<secret>[0-9a-f]{32})"
        r"(?![A-Za-z0-9])",
        _secret_has_digit,
        needles=("/",),
    ),
    # A LaunchDarkly SDK, API or mobile key: a prefix and a UUID, with its name near.
    _shape(
        "LaunchDarkly key",
        r"(?<![A-Za-z0-9_-])(?:sdk|api|mob)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}"
        r"-[0-9a-f]{12}(?![A-Za-z0-9])",
        _near_vendor("launchdarkly", "ld_"),
        needles=("sdk-", "api-", "mob-"),
    ),
    _shape(
        "Confluent API secret",
        r"api-key[ \t]++store[ \t]++[A-Z0-9]{16}[ \t]++(?P<secret>[A-Za-z0-9+/]{64})"
        r"(?![A-Za-z0-9+/])",
        _random_secret,
        needles=("api-key",),
    ),
    # Microsoft Teams incoming webhooks (webhook.office.com, formerly outlook.office.com).
    _shape(
        "Teams webhook",
        r"https://(?:[A-Za-z0-9-]{1,63}+\.){0,5}office(?:365)?+\.com/webhook(?:b2)?+/[^\s/]{1,120}+"
        r"/IncomingWebhook/(?P<secret>[0-9a-f]{32}(?:/[0-9a-f-]{36}(?:/[A-Za-z0-9_-]{20,})?+)?+)",
        needles=("/IncomingWebhook/",),
    ),
    # A Mattermost incoming webhook: /hooks/ and a 26-character id, which is the secret.
    _shape(
        "Mattermost webhook",
        r"https?://[A-Za-z0-9.:-]{1,253}+/hooks/(?P<secret>[a-z0-9]{26})(?![A-Za-z0-9_-])",
        _secret_has_digit,
        needles=("/hooks/",),
    ),
    # Oracle's thin driver with the password inline: jdbc:oracle:thin:scott/tiger@//host.
    _shape(
        "Oracle JDBC password",
        r"jdbc:oracle:[a-z]{1,10}+:[A-Za-z0-9_$#.]{1,64}+/(?P<secret>[^\s/@\"']{1,128}+)@",
        _oracle_password,
        re.IGNORECASE | re.ASCII,
        needles=("jdbc:oracle",),
    ),
    # A Rails master key: 32 hex digits after "master.key" (cat config/master.key).
    _shape(
        "Rails master key",
        r"master[._]key[\"']?+[^\r\n0-9a-f]{0,60}+(?:\r?\n[ \t]{0,8}+)?+"
        r"(?P<secret>[0-9a-f]{32})(?![A-Za-z0-9])",
        _secret_has_digit,
        needles=("master.key", "master_key"),
    ),
    # A session cookie's value: the cookie a server trusts as the login.
    _shape(
        "session cookie",
        r"(?<![A-Za-z0-9_.-])(?:sessionid|session|session_id|connect\.sid|phpsessid|jsessionid"
        r"|_?+(?:[A-Za-z0-9]{1,30}+_){1,3}+session)=(?P<secret>[A-Za-z0-9%._~+/:=-]{20,4096}+)",
        _session_value,
        re.IGNORECASE | re.ASCII,
        needles=("session", "sessid", "connect.sid"),
    ),
)


# The checks besides the shapes that a needle of the text selects (see _findings).
_Check = Literal[
    "assignments",
    "named values",
    "named assignments",
    "connect calls",
    "prose passwords",
    "command passwords",
    "strong pairs",
]


class _NeedleTable:
    """Needles looked for in a text all at once (:mod:`hikmah.model._needles`), each naming the
    shapes (by position in :data:`_SHAPES`) and checks it selects: a text is searched
    once for every needle, not once per shape or check that names it."""

    def __init__(self, selects: dict[str, list[int | _Check]]) -> None:
        self._needles = tuple(needle.encode() for needle in selects)
        self._selects = tuple(selects.values())

    def selected(self, text: str) -> set[int | _Check]:
        """What the needles ``text`` holds select."""
        chosen: set[int | _Check] = set()
        # "surrogatepass": a text may hold lone surrogates (JSON lets it); each is still
        # bytes of its own, and the needles hold none.
        for position in _needles.found(text.encode("utf-8", "surrogatepass"), self._needles):
            chosen.update(self._selects[position])
        return chosen


def _needle_table(folded: bool, checks: dict[_Check, tuple[str, ...]]) -> _NeedleTable:
    """The table of the shapes' needles looked for as they are (``folded`` False) or in
    the lowercased text, and of ``checks``' needles."""
    selects: dict[str, list[int | _Check]] = {}
    for position, shape in enumerate(_SHAPES):
        if shape.folded == folded:
            for needle in shape.needles:
                selects.setdefault(needle, []).append(position)
    for check, needles in checks.items():
        for needle in needles:
            selects.setdefault(needle, []).append(check)
    return _NeedleTable(selects)


_NEEDLELESS = frozenset(i for i, shape in enumerate(_SHAPES) if not shape.needles)


# Values are capped at 256 characters: a credential is never longer, and the
# cap keeps the work per candidate constant however long the input runs on.
_KEYWORDS = (
    r"pass(?:word|wd|phrase)|secret|api[ ._-]?(?:key|token)"
    r"|(?:access|auth|refresh)[ ._-]?token|private[ ._-]?key"
)
_ASSIGNMENT = re.compile(
    r"(?P<kw>" + _KEYWORDS + ")"
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
_KEYWORD = re.compile(_KEYWORDS, re.IGNORECASE | re.ASCII)

# Keyed by the keyword's first three letters, which tell every keyword apart.
# The patterns are ASCII-only so that case folding cannot match a keyword
# spelled with look-alikes (the long s, the Kelvin sign) that miss this table.
_KIND_BY_KEYWORD = {
    "pas": "password",
    "sec": "secret",
    "api": "API key",
    "acc": "access token",
    "aut": "auth token",
    "ref": "refresh token",
    "pri": "private key",
}

# Names that talk about the secret: where it lives, what it is called, how
# long it must be. Their values are metadata, not the credential.
_METADATA_SUFFIXES = (
    "name",
    "ref",
    "path",
    "file",
    "url",
    "uri",
    "length",
    "len",
    "policy",
    # Where the secret travels or is read from (api_key_header: X-API-Key).
    "header",
    "headers",
    "field",
    "param",
    "env",
    "var",
    # User-interface text about the secret (password_label: "Password").
    "label",
    "hint",
    "mismatch",
    "message",
    "msg",
    "error",
    "title",
    "placeholder",
    "prompt",
    "tooltip",
    "help",
    "description",
)

_DESCRIBING = frozenset(
    [
        "as",
        "at",
        "by",
        "for",
        "from",
        "in",
        "into",
        "of",
        "on",
        "only",
        "via",
        "with",
        "without",
        "not",
        "never",
        "no",
        "see",
        "set",
        "stored",
        "hashed",
        "hash",
        "encrypted",
        "env",
        "environment",
        "vault",
        "kms",
        "managed",
        "manager",
        "rotated",
        "rotation",
        "redacted",
        "masked",
        "configured",
        "mounted",
        "provided",
        "loaded",
        "injected",
        "server",
        "client",
        "side",
        "runtime",
        "config",
        "settings",
        "dashboard",
        "creds",
        "credentials",
        "placeholder",
        "your",
        "here",
        "example",
        "dummy",
        "test",
        "testing",
        "fake",
        "mock",
        "fixture",
        "demo",
        "sample",
        "unset",
        "none",
        "empty",
        "required",
        "optional",
        "daily",
        "weekly",
        "monthly",
        "quarterly",
        "yearly",
        "annually",
    ]
)

_REFERENCE_STARTS = ("$", "<", "%", "{", "*")
_REFERENCE_PREFIXES = (
    "vault:",
    "env:",
    "redacted",
    "[redacted",
    "[withheld",
    "keyring:",
    "arn:",
    "ssm:",
    "sops:",
    # A SOPS-encrypted value.
    "enc[",
    # Code reading the environment (process.env.X!, std::env::var("X")).
    "process.env",
    "import.meta.env",
    "os.environ",
    "os.getenv",
    "env::",
    "std::env",
    "env[",
    "env.fetch",
    "system.getenv",
    "deno.env",
    "environment.getenvironmentvariable",
)

_WORD_SPLIT = re.compile(r"[-_ ]")
_LOWER_WORD = re.compile(r"[a-z0-9]*[a-z]")
_NUMBER = re.compile(r"[0-9]+")
# A chain's first word: a random token's first segment is often one letter
# (``x_rotated-2026-09``, ``p_assw0rd``), a description's never is.
_FIRST_WORD = re.compile(r"[a-z]{2,}")
_ENV_WORD = re.compile(r"[A-Z0-9]*[A-Z]")
_PATH = re.compile(r"(?:~|\.{1,2})?/")
# A path's segments are names; a segment of 20+ base64 characters mixing cases and
# digits, a "+", or "=" padding at the end make base64 that happens to start with
# "/" (a private key's "/fUJPG5GbCh+TrX..."), not a path.
_BASE64_SEGMENT = re.compile(r"[A-Za-z0-9+]{20,}+")
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]{0,30}+://")
_DATE = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}"
    r"(?:[T ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]{1,9})?)?(?:Z|[+-][0-9]{2}:?[0-9]{2})?)?"
)
# A call or an index, Rust paths and macros too (std::env::var(, env!().
_CALL_OR_INDEX = re.compile(
    r"[A-Za-z_][A-Za-z0-9_.]{0,255}+(?:::[A-Za-z_][A-Za-z0-9_.]{0,255}+){0,16}+!?[(\[]"
)
_HEADER_NAME = re.compile(r"[Xx]-[A-Za-z]{1,20}+(?:-[A-Za-z]{1,20}+){0,6}+")
_IDENTIFIER = re.compile(r"_*+[A-Za-z][A-Za-z0-9_]*+")
_IDENTIFIER_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_CREDENTIAL_WORDS = re.compile(
    r"(?:^|_)(?:pass(?:word|wd|phrase)|secret|creds|credentials"
    r"|(?:api|access|auth|refresh|bearer)_?(?:key|token)|private_?key)s?(?:_|$)"
)
# Docstring field lists (":param password: ...") document a name; they
# never assign it.
_DOC_FIELD = re.compile(
    r"[ \t]*+(?:[*#/-]{1,3}+[ \t]*+)?:(?:param|type|arg|argument|key|keyword|ivar|cvar|var"
    r"|vartype)\b"
)
# "Password: Password to send with the request." is a sentence, not a value.
_CAPITALISED = re.compile(r"[A-Z][a-z]++")
_PROSE_FOLLOWS = re.compile(r"[ \t]++[a-z]")
_ATTRIBUTE_PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_]*+(?:\.[A-Za-z_][A-Za-z0-9_]*+)+")


def _is_reference(value: str) -> bool:
    return value.startswith(_REFERENCE_STARTS) or value.lower().startswith(_REFERENCE_PREFIXES)


# A reference in a URL or a .netrc, where a password may itself start with a symbol
# ("*Y1Od3...", "%qhrd..."): a template variable, not just any leading symbol.
_TEMPLATE = re.compile(
    r"\$\{[^}]*+\}?|\$\([^)]*+\)?|\$[A-Za-z_][A-Za-z0-9_]*+|\{\{.*|\{[A-Za-z0-9_.]*+\}"
    r"|<[^>]*+>|%\([A-Za-z0-9_]++\)s|%s|%[A-Za-z_][A-Za-z0-9_]*+%"
)


def _is_template(value: str) -> bool:
    """A template variable or reference standing for a password in a URL or file."""
    return (
        _TEMPLATE.fullmatch(value) is not None
        or value.lower().startswith(_REFERENCE_PREFIXES)
        or value.startswith(("${", "{{", "$("))
    )


def _is_env_name(value: str) -> bool:
    # A leading underscore marks a private constant (_SSH_PRIVATE_KEY_TYPES).
    words = value.lstrip("_").split("_")
    return (
        len(words) >= 2
        and words[0][:1].isalpha()
        and all(_ENV_WORD.fullmatch(word) for word in words)
    )


def _is_event_and_date(words: list[str]) -> bool:
    """``rotated-2026-09``: lowercase words, the last ending in -ed, then a date."""
    first_number = next((i for i, word in enumerate(words) if _NUMBER.fullmatch(word)), None)
    if first_number is None or first_number == 0:
        return False
    date = words[first_number:]
    return (
        len(date) <= 3
        and len(date[0]) == 4
        and all(_NUMBER.fullmatch(part) and len(part) <= 2 for part in date[1:])
        and words[first_number - 1].endswith("ed")
        and _FIRST_WORD.fullmatch(words[0]) is not None
        and all(_LOWER_WORD.fullmatch(word) for word in words[:first_number])
    )


def _is_description(value: str) -> bool:
    words = _WORD_SPLIT.split(value)
    if _is_event_and_date(words):
        return True
    # A word ending in a digit, a single word, or a chain of words none of
    # which describes anything reads as a password or passphrase. A single
    # describing word (configured, placeholder, credentials) describes, too.
    if len(words) == 1:
        return words[0] in _DESCRIBING
    return (
        _FIRST_WORD.fullmatch(words[0]) is not None
        and all(_LOWER_WORD.fullmatch(word) for word in words)
        and any(word in _DESCRIBING for word in words)
    )


def _names_a_credential(value: str) -> bool:
    """A variable named after a credential (``password``, ``key_password``,
    ``refreshToken``): code passing a secret along, not the secret."""
    # Words joined by hyphens too: a test's dummy "wrong-password" names one.
    value = value.replace("-", "_") if value[:1].isalpha() else value
    if _IDENTIFIER.fullmatch(value) is None or value[-1].isdigit():
        return False
    words = "_".join(word.lower() for word in _IDENTIFIER_WORD.findall(value))
    return _CREDENTIAL_WORDS.search(words) is not None


def _is_code(value: str) -> bool:
    if _CALL_OR_INDEX.match(value):
        return True
    # TypeScript's non-null assertion (process.env.KEY!) ends an expression.
    value = value.removesuffix("!")
    # A segment ending in a digit (ya29.a0AfH6, john.doe1) reads as a token or
    # a password, not an attribute path.
    # A segment of 16+ characters mixing cases and digits is a token's (a Discord bot
    # token's three parts read like an attribute path).
    return _ATTRIBUTE_PATH.fullmatch(value) is not None and not any(
        part[-1].isdigit()
        or (len(part) >= 16 and _has_digit(part) and _LOWER.search(part) and _UPPER.search(part))
        for part in value.split(".")
    )


def _is_path(value: str) -> bool:
    """A file path: starts like one and is made of names, not base64."""
    if _PATH.match(value) is None:
        return False
    if "+" in value or value.endswith("="):
        return False
    return not any(
        _BASE64_SEGMENT.fullmatch(segment) is not None
        and _has_digit(segment)
        and _LOWER.search(segment) is not None
        and _UPPER.search(segment) is not None
        for segment in value.split("/")
    )


def _is_header_name(value: str) -> bool:
    """An HTTP header's name (X-API-Key, X-Auth-Token): where a credential goes."""
    return _HEADER_NAME.fullmatch(value) is not None


# Text for people, not a value: "At least 12 characters", "Passwords do not match".
_UI_TEXT = re.compile(r"[A-Z][a-z]++(?:[ \t](?:[a-z]++|[0-9]++)){1,12}+[.!]?")
# A note in brackets ("(rotated)", "(see vault)") instead of a value.
_NOTE = re.compile(r"\([A-Za-z][A-Za-z _-]{0,60}+\)?")


def _is_example(value: str) -> bool:
    """A note in brackets instead of a value."""
    return _NOTE.fullmatch(value) is not None


# A value masked or filled in for an example: a run of mask dots or asterisks, or of
# x after a vendor's prefix (sk_live_xxxxxxxx, sk-proj-••••Tz9Q, AGE-SECRET-KEY-1XXXX).
_MASK_RUN = re.compile(r"[xX]{8,}+|[*\u2022\u25cf\u2219\u00b7]{4,}+")
# What every mask run holds, lowercased (a cheap test before the regex).
_MASK_MARKS = ("xxxx", "*", "\u2022", "\u25cf", "\u2219", "\u00b7")
# Text for people in any language, ending as a sentence does: "Passwort vergessen?",
# "La tua password è scaduta, impostane una nuova."
_SENTENCE = re.compile(r"[^\W\d_][\w'\u2019-]*+(?:,?+[ \t]++[\w'\u2019-]++){1,20}+[.!?\u2026]")
# A value read from a file: vault's and curl's "@file" (password=@db-pass.txt).
_FILE_VALUE = re.compile(r"@[A-Za-z0-9_./~-]{1,200}+")
_EXTENSION = re.compile(r"\.[a-z]{2,5}+\Z")


def _is_masked(value: str) -> bool:
    """A masked value (``sk-proj-••••Tz9Q``, ``ab****yz``), a vendor prefix filled in
    with x (``sk_live_xxxxxxxx``) or cut short with an ellipsis (``sk-...a1B2``,
    ``sk_live_...``)."""
    # Substring tests first: this runs on every assigned value, and a regex's search of
    # each is what made a long run of assignments slow.
    if ("..." in value or "\u2026" in value) and (
        _KNOWN_PREFIX.match(value) is not None or len(value) <= 24
    ):
        return True
    lowered = value.lower()
    if not any(mark in lowered for mark in _MASK_MARKS) or _MASK_RUN.search(value) is None:
        return False
    # "xxxxxxxx" alone is what the unit tests call a password (password = xxxxxxxx).
    return (
        _KNOWN_PREFIX.match(value) is not None
        or _MASK_RUN.fullmatch(value) is None
        or (not value[:1].isalnum())
    )


# Tokens public by design: a Mapbox public token (pk.eyJ...; its secret ones are sk.).
_PUBLIC_TOKEN_PREFIXES = ("pk.eyJ",)
# A template's default that says to replace it; a password may really be one (so the
# unit tests refuse password => 'changeme'), a generated key or token never is.
_DEFAULT_VALUES = frozenset(
    ["changeme", "change_me", "change-me", "changeit", "replaceme", "replace_me", "replace-me"]
)


def _value_is_secret(value: str) -> bool:
    """Whether an assigned value is the credential itself rather than a description."""
    if value[:1].isupper() and value[-1:] in ".!?\u2026" and _SENTENCE.fullmatch(value):
        return False
    if _is_masked(value.strip()):
        # Before the trailing dots go: sk_live_... is cut short.
        return False
    # Trailing punctuation of a sentence, or the backslash of an escaped
    # closing quote in JSON that was itself quoted, is not part of the value.
    value = value.strip().rstrip(".:\\")
    if len(value) < _MIN_VALUE:
        return False
    if _is_example(value) or _UI_TEXT.fullmatch(value) or _is_masked(value):
        return False
    if value.startswith("@") and _FILE_VALUE.fullmatch(value) and _EXTENSION.search(value):
        return False
    if _is_reference(value) or _is_env_name(value) or _is_description(value):
        return False
    if _names_a_credential(value) or value.startswith(_PUBLIC_TOKEN_PREFIXES):
        return False
    if _is_path(value) or _URL.match(value) or _DATE.fullmatch(value):
        return False
    return not _is_code(value) and not _is_header_name(value)


def _in_prose(text: str, match: re.Match[str], group: str) -> bool:
    """Whether an assignment-like match is documentation rather than a value."""
    line_start = text.rfind("\n", max(0, match.start() - 120), match.start()) + 1
    if _DOC_FIELD.match(text, line_start, match.start()):
        return True
    value = match.group(group)
    if group != "bare" or _CAPITALISED.fullmatch(value) is None:
        return False
    return value.lower() in _DESCRIBING or _PROSE_FOLLOWS.match(text, match.end()) is not None


_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_NAME_REACH = 40
# Words of a comment after a value that make the value an example.
_EXAMPLE_WORDS = frozenset(["placeholder", "example", "dummy", "fake", "sample", "test"])
_COMMENT = re.compile(r"[ \t]++(?:#|//|;)[ \t]*+(?P<comment>[^\r\n]{0,120}+)")
# A Bitnami SealedSecret's values are ciphertext under "encryptedData", safe to commit.
_SEALED = "encryptedData"
_SEALED_VALUE = re.compile(r"[A-Za-z0-9+/]{64,}+={0,2}+")


def _name_before(text: str, start: int) -> str:
    """The rest of the name that ends at ``start`` (``redis.auth.existing`` before
    ``Secret``, ``--`` before ``secret``), at most 40 characters back."""
    i, low = start, max(0, start - _NAME_REACH)
    while i > low and text[i - 1] in _NAME_CHARS:
        i -= 1
    return text[i:start]


# A comment on the next line that points at the value above ("# ^ example ...").
_COMMENT_BELOW = re.compile(
    r"[ \t]*+\r?\n[ \t]*+(?:#|//|;)[ \t]*+(?:\^|above\b)(?P<comment>[^\r\n]{0,120}+)", re.I
)


def _commented_as_example(text: str, end: int) -> bool:
    """A comment on the value's line, or one below pointing up at it, calls it a
    placeholder or an example."""
    comment = _COMMENT.match(text, end) or _COMMENT_BELOW.match(text, end)
    if comment is None:
        return False
    words = _WORD_SPLIT.split(re.sub(r"[^a-z -]", " ", comment.group("comment").lower()))
    return bool(_EXAMPLE_WORDS.intersection(words))


_SEALED_LABELS = ("encrypteddata", "ciphertext", "sealed")


def _sealed_at(text: str) -> int:
    """Where the first mark of ciphertext is: ``encryptedData``, or a sentence calling
    what follows ciphertext or sealed; -1 when there is none."""
    lowered = text.lower()
    found = [at for at in (lowered.find(label) for label in _SEALED_LABELS) if at != -1]
    return min(found, default=-1)


def _sealed(text: str, sealed_at: int, start: int, value: str) -> bool:
    """A SealedSecret's ciphertext: long base64 after ``encryptedData``."""
    return sealed_at != -1 and sealed_at < start and _SEALED_VALUE.fullmatch(value) is not None


# "the tenant id, not a secret: ...": the sentence says the value is no credential.
_NEGATED = re.compile(r"(?:(?<![A-Za-z])not?|n't)(?:[ \t]{1,3}+(?:a|an|the))?[ \t]{1,3}+\Z", re.I)
# A name inside a reference to a stored secret: an ARN (arn:aws:secretsmanager:...:
# secret:name) or a CloudFormation dynamic reference ({{resolve:...:SecretString:...}}).
_REFERENCE_TOKEN = re.compile(r"(?:arn:|\{\{resolve:)[^\s\"']{0,200}+\Z", re.I)


def _inside_reference(text: str, start: int) -> bool:
    """Whether the name at ``start`` is part of an ARN or a dynamic reference (where a
    colon comes right before it)."""
    return (
        start > 0
        and text[start - 1] == ":"
        and _REFERENCE_TOKEN.search(text, max(0, start - 200), start) is not None
    )


def _negated(text: str, start: int) -> bool:
    """Whether the words right before ``start`` say "not (a)" or "no"."""
    window = text[max(0, start - 12) : start]
    return ("no" in window.lower() or "n't" in window) and _NEGATED.search(window) is not None


def _assignment_allowed(text: str, match: re.Match[str], group: str, sealed_at: int) -> bool:
    """An assignment whose context makes it no credential: its value is commented as
    a placeholder, is SealedSecret ciphertext, names an existing secret, sits inside
    a reference to a stored secret, or the sentence says it is not a secret."""
    return (
        _commented_as_example(text, match.end())
        or _sealed(text, sealed_at, match.start(group), match.group(group))
        or _inside_reference(text, match.start())
        or _negated(text, match.start())
    )


# A bare value stops at "&", which joins a query string's parameters; but in a config
# file (password=D6&XTm^O&*8dA8Wl, become_pass: 7Qf&?+Yiu...) it is part of the value,
# unless what follows it is another parameter (&user=) or an entity (&amp;).
_AMP_REST = re.compile(r"[^\s\"'`,;)\]}]{0,256}+")
_QUERY_PARAM = re.compile(r"&(?:amp;|[A-Za-z_][A-Za-z0-9_.\[\]-]{0,40}+=)")


def _bare_value(match: re.Match[str], group: str) -> tuple[str, int, int]:
    """The value of ``group`` and its span, a bare value carried on through "&"."""
    start, end = match.span(group)
    text = match.string
    if group == "bare" and text.startswith("&", end):
        rest = _AMP_REST.match(text, end)
        if rest is not None and _QUERY_PARAM.search(rest.group()) is None:
            end = rest.end()
    return text[start:end], start, end


def _assignments(text: str) -> Iterable[tuple[str, tuple[int, int]]]:
    """Yield the kind and value span of every assignment whose value is a secret."""
    pos = 0
    sealed_at = _sealed_at(text)
    while (match := _ASSIGNMENT.search(text, pos)) is not None:
        group = next(g for g in ("dq", "sq", "bq", "bare") if match.group(g) is not None)
        name = match.group("kw") + match.group("tail")
        before = _name_before(text, match.start()).lower()
        value, start, end = _bare_value(match, group)
        if (
            not name.lower().endswith(_METADATA_SUFFIXES)
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
            and (not before.startswith("-") or _flag_value_is_secret(value))
            and _value_is_secret(value)
            and not _in_prose(text, match, group)
            and not _assignment_allowed(text, match, group, sealed_at)
        ):
            kind = _KIND_BY_KEYWORD[match.group("kw")[:3].lower()]
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


# Any NAME = value: .env, export, YAML, JSON, TOML, INI. The name is scanned from its
# first character only (the lookbehind excludes its alphabet); its words decide.
_NAMED_ASSIGNMENT = re.compile(
    r"(?<![A-Za-z0-9_.-])(?P<name>[A-Za-z_][A-Za-z0-9_.-]{0,63}+)[\\\"'`\]]{0,4}+[ \t]{0,5}+"
    r"(?::=|=>|[:=])[ \t]{0,5}+"
    r"(?:\"(?P<dq>[^\"\r\n]{1,256}+)\"|'(?P<sq>[^'\r\n]{1,256}+)'|`(?P<bq>[^`\r\n]{1,256}+)`"
    r"|[\"'`]?(?P<bare>[^\s\"'`,;&)\]}]{1,256}+))",
    re.ASCII,
)
_NAME_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
# Name words that make the value a password; "pass", "pwd" and "auth" are short words
# that name other things too, so their value must also read as a password.
_PASSWORD_WORDS = frozenset(["password", "passwd", "passphrase", "secret", "pass", "pwd"])
_WEAK_WORDS = frozenset(["pass", "pwd"])
# Name words whose value must look random: long, mixed classes or high entropy.
_TOKEN_WORDS = frozenset(["token", "auth", "key", "psk"])
_NAME_WORDS = _PASSWORD_WORDS | _TOKEN_WORDS
# Words after the credential's word that make the name about it: where it lives, its
# id, its type, how long it lives, its label.
_ABOUT_WORDS = frozenset(
    [
        *_METADATA_SUFFIXES,
        "id",
        "ids",
        "type",
        "types",
        "count",
        "ttl",
        "expiry",
        "expires",
        "expiration",
        "lifetime",
        "timeout",
        "endpoint",
        "location",
        "dir",
        "size",
        "bits",
        "algorithm",
        "alg",
        "format",
        "prefix",
        "version",
        "hash",
        "fingerprint",
        "mode",
        "method",
        "provider",
        "enabled",
        "required",
        "min",
        "max",
        "limit",
        "source",
        "store",
        "vault",
        "arn",
        "secret",
        "secrets",
    ]
)
# Words before "key" that make it a key of data, not a credential.
_DATA_KEY_WORDS = frozenset(
    [
        "primary",
        "sort",
        "partition",
        "foreign",
        "cache",
        "lookup",
        "idempotency",
        "routing",
        "shard",
        "row",
        "range",
        "hash",
        "composite",
        "unique",
        "index",
        "object",
        "map",
        "dict",
        "dedup",
        "dedupe",
        "deduplication",
        "group",
        "ordering",
        "message",
        "translation",
        "i18n",
        "public",
        "pub",
        "publishable",
        "gpg",
        "pgp",
        "ssh",
        "host",
        "sign",
        "hot",
        "api_key_header",
        "s3",
        "storage",
        "label",
        "cursor",
        "page",
        "pagination",
        "next",
        "csrf",
        "existing",
    ]
)


# First words that make a name a switch or a handler (onPass, is_token_valid,
# allow_key_reuse), not a credential.
_PREDICATE_WORDS = frozenset(
    ["on", "handle", "is", "has", "should", "can", "allow", "enable", "disable", "use", "skip"]
)


def _credential_word(name: str) -> str | None:
    """The credential word a name is built around (``TOKEN`` in ``PAGERDUTY_TOKEN``,
    ``pass`` in ``ansible_become_pass``), or None when it has none or is about one."""
    words: list[str] = [word.lower() for word in _NAME_WORD.findall(name)]
    last = next((i for i in range(len(words) - 1, -1, -1) if words[i] in _NAME_WORDS), None)
    if last is None or "existing" in words or words[0] in _PREDICATE_WORDS:
        return None
    if _ABOUT_WORDS.intersection(words[last + 1 :]):
        return None
    word: str = words[last]
    if word in _TOKEN_WORDS and _DATA_KEY_WORDS.intersection(words[:last]):
        return None
    return word


def _entropy(value: str) -> float:
    counts: dict[str, int] = {}
    for char in value:
        counts[char] = counts.get(char, 0) + 1
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


_HEX_NUMBER = re.compile(r"0[xX][0-9A-Fa-f]++")
_RELATIVE_PATH = re.compile(r"(?:[A-Za-z0-9_.-]{1,64}+/){1,16}+[A-Za-z0-9_.-]{1,64}+")


_ALPHABET_RUN = "abcdefgh"


def _random_value(value: str) -> bool:
    """A generated credential: 16+ characters with no space, and random (what a named
    token must be), three character classes, or high entropy."""
    value = value.strip()
    # An "=" inside (not base64 padding) makes a k=v list, not one token.
    if len(value) < 16 or " " in value or "=" in value.rstrip("="):
        return False
    if not _value_is_secret(value) or _is_placeholder(value):
        return False
    if _KNOWN_PREFIX.match(value) is not None:
        # Left to its shape, which names it better (and finds it joined when split).
        return False
    if _HEX_NUMBER.fullmatch(value) is not None:
        # 0x4AEE18F83AFDEB23: a number or a key id written in hex.
        return False
    if _ALPHABET_RUN in value.lower():
        # 123456789:ABCdefGhIJKlmNoPQRsTUVwxyZ: documentation spells out the alphabet;
        # a generated token never holds eight letters in order.
        return False
    if _RELATIVE_PATH.fullmatch(value) is not None and not any(
        _BASE64_SEGMENT.fullmatch(segment) for segment in value.split("/")
    ):
        # uploads/2024/06/Report_Q2.pdf: an object key, made of names.
        return False
    if _looks_random(value):
        return True
    classes = sum(
        pattern.search(value) is not None for pattern in (_LOWER, _UPPER, _DIGIT, _SYMBOL)
    )
    return _has_digit(value) and (classes >= 3 or _entropy(value) >= 4.0)


def _named_assignments(text: str) -> Iterable[tuple[str, tuple[int, int]]]:
    """Yield the kind and value span of every ``NAME = value`` whose name is built
    around a credential word (``PAGERDUTY_TOKEN=``, ``"pass": "..."``, INI ``key =``)
    and whose value is a secret."""
    sealed_at = _sealed_at(text)
    pos = 0
    while (match := _NAMED_ASSIGNMENT.search(text, pos)) is not None:
        pos = match.start("name") + len(match.group("name"))
        name = match.group("name")
        if not any(hint in name.lower() for hint in _NAME_HINTS) or _KEYWORD.search(name):
            # A name with a keyword of its own (DB_PASSWORD, apiKey) is judged as an
            # assignment already.
            continue
        # A name of one word takes the word before it ("cache key: ...").
        before = _WORD_BEFORE.search(text[max(0, match.start() - 30) : match.start()])
        full = f"{before.group(1)}_{name}" if before and _NAME_WORD.fullmatch(name) else name
        word = _credential_word(full)
        if (
            word is None
            or name.lower().endswith(_METADATA_SUFFIXES)
            or name.lower() in _PUBLIC_KEY_NAMES
        ):
            continue
        group = next(g for g in ("dq", "sq", "bq", "bare") if match.group(g) is not None)
        value = _bare_value(match, group)[0].rstrip("\\")
        if word == "auth" and _decodes_to_text(value):
            # A docker or npm "auth" is base64 of user:password, which its shape decodes.
            continue
        if word in _PASSWORD_WORDS:
            secret = _value_is_secret(value) and (
                word not in _WEAK_WORDS or _prose_value_is_secret(value, strict=False)
            )
        else:
            secret = _random_value(value) and (
                # A bare "key: <hex>" is as often a digest or an id: the name alone must
                # come with mixed case.
                full.lower() != "key" or (_LOWER.search(value) and _UPPER.search(value)) is not None
            )
        if (
            secret
            and not _in_prose(text, match, group)
            and not _assignment_allowed(text, match, group, sealed_at)
        ):
            kind = "password" if word in _PASSWORD_WORDS and word != "secret" else word
            kind = {"auth": "auth token", "psk": "key", "secret": "secret"}.get(kind, kind)
            start = match.start(group)
            yield f"{kind} assignment", (start, start + len(value))
            pos = match.end()


_NAME_HINTS = ("pass", "pwd", "secret", "token", "auth", "key", "psk")
# Public keys written with their type (Tailscale's nodekey:..., discokey:..., mkey:...).
_PUBLIC_KEY_NAMES = frozenset(["nodekey", "discokey", "mkey", "nlpub"])
_WORD_BEFORE = re.compile(r"(?<![A-Za-z0-9])([A-Za-z0-9]{1,20}+)[ \t]{1,3}+\Z")


def _decodes_to_text(value: str) -> bool:
    """Base64 of printable ASCII."""
    raw = _b64decode(value)
    return raw is not None and raw.isascii() and raw.decode("ascii").isprintable()


# Passwords on the command lines of tools whose flag for it is a short one: a flag
# whose meaning depends on the command (-p is a port elsewhere) counts only after
# that command on the same line, not after a |, ; or &.
_PASSWORD_FLAG = re.compile(
    r"(?<![A-Za-z0-9_-])-(?P<flag>[paPw])(?:(?P<space>[ \t]{1,3}+)|(?=[^\s]))"
    r"(?P<quote>[\"']?)(?P<secret>[^\s\"']{1,256}+)",
    re.ASCII,
)
# The commands and the flag that takes a password there.
_FLAG_COMMANDS = {
    "p": re.compile(
        r"(?<![A-Za-z0-9_-])(?:mysql(?:dump|admin|import|show|check|sh|binlog|slap)?+"
        r"|mariadb(?:-dump|-admin|dump)?+|sshpass)(?:\.exe)?+[ \t]"
    ),
    "a": re.compile(r"(?<![A-Za-z0-9_-])redis-cli(?:\.exe)?+[ \t]"),
    # SQL Server's sqlcmd, bcp and osql take the password after -P.
    "P": re.compile(r"(?<![A-Za-z0-9_-])(?:sqlcmd|bcp|osql)(?:\.exe)?+[ \t]", re.IGNORECASE),
    # OpenLDAP's clients take the bind password after -w.
    "w": re.compile(
        r"(?<![A-Za-z0-9_-])ldap(?:search|modify|add|delete|modrdn|passwd|whoami|compare|exop)"
        r"[ \t]"
    ),
}
# smbclient -U DOMAIN\user%password (or --user=).
_SMB_USER = re.compile(
    r"(?<![A-Za-z0-9_-])(?:-U|--user)(?:[ \t]{1,3}+|=)[\"']?+[^\s%\"']{1,128}+%"
    r"(?P<secret>[^\s\"']{1,256}+)",
    re.ASCII,
)
_SMB_COMMAND = re.compile(r"(?<![A-Za-z0-9_-])(?:smbclient|smbcacls|smbget|rpcclient)[ \t]")
# net use Z: \\server\share /user:DOMAIN\user PASSWORD (or the password before /user:).
_NET_USE = re.compile(
    r"(?<![A-Za-z0-9_-])net[ \t]{1,5}+use[ \t]{1,5}+(?:[A-Za-z*]:[ \t]{1,5}+)?+"
    r"(?:[^\s]{1,256}+[ \t]{1,5}+(?P<before>[^\s/\"'][^\s\"']{0,255}+)[ \t]{1,5}+/user:"
    r"|[^\s]{1,256}+[ \t]{1,5}+/user:[^\s]{1,256}+[ \t]{1,5}+[\"']?+"
    r"(?P<after>[^\s/\"'][^\s\"']{0,255}+))",
    re.IGNORECASE | re.ASCII,
)
# PowerShell: ConvertTo-SecureString "..." -AsPlainText.
_SECURE_STRING = re.compile(
    r"ConvertTo-SecureString[ \t]{1,5}+(?:-String[ \t]{1,5}+)?+"
    r"[\"'](?P<secret>[^\"'\r\n]{1,256}+)[\"'][ \t]{1,5}+-AsPlainText",
    re.IGNORECASE | re.ASCII,
)
# htpasswd -b[c...] [file] user password: the password is the last argument.
_HTPASSWD = re.compile(
    r"(?<![A-Za-z0-9_-])htpasswd[ \t]{1,5}+(?P<args>[^\r\n|;&<>]{1,300}+)", re.ASCII
)
_COMMAND_NEEDLES = (
    "mysql",
    "mariadb",
    "sshpass",
    "redis-cli",
    "net",
    "securestring",
    "htpasswd",
    "sqlcmd",
    "bcp",
    "osql",
    "ldap",
    "smb",
    "rpcclient",
)


def _after_command(text: str, start: int, command: re.Pattern[str]) -> bool:
    """Whether ``command`` runs on the line before ``start``, not piped or chained
    away from it."""
    window = text[max(0, start - _CLIENT_REACH) : start]
    window = window[window.rfind("\n") + 1 :]
    ends = [found.end() for found in command.finditer(window)]
    return bool(ends) and not any(separator in window[ends[-1] :] for separator in "|;&")


def _command_passwords(text: str) -> Iterable[tuple[str, tuple[int, int]]]:
    """Yield the span of every password given on a command line by a short flag
    (``mysql -pX``, ``sshpass -p X``, ``redis-cli -a X``), after ``net use /user:``,
    to ``ConvertTo-SecureString -AsPlainText`` or to ``htpasswd -b``."""
    label = "password on a command line"
    if "-" in text:
        for match in _PASSWORD_FLAG.finditer(text):
            command = _FLAG_COMMANDS[match.group("flag")]
            value = match.group("secret")
            # "mysql -u root -p dbname" prompts and names a database: a password
            # after a space must read as one strictly.
            strict = (
                bool(match.group("space"))
                and match.group("flag") == "p"
                and not (match.group("quote"))
            )
            if (
                _after_command(text, match.start(), command)
                and not value.startswith("-")
                and not _is_template(value)
                and not _is_placeholder(value)
                and _prose_value_is_secret(value, strict=strict)
            ):
                yield label, _value_span(match)
    for match in _SMB_USER.finditer(text):
        value = match.group("secret")
        if (
            _after_command(text, match.start(), _SMB_COMMAND)
            and len(value) >= _MIN_PROSE_VALUE
            and not _is_template(value)
            and not _is_placeholder(value)
        ):
            yield label, match.span("secret")
    for match in _NET_USE.finditer(text):
        group = "before" if match.group("before") is not None else "after"
        value = match.group(group)
        if not _is_placeholder(value) and _prose_value_is_secret(value, strict=False):
            yield label, match.span(group)
    for match in _SECURE_STRING.finditer(text):
        value = match.group("secret")
        if (
            len(value) >= _MIN_PROSE_VALUE
            and not _is_template(value)
            and not value.startswith("$")
            and not _is_placeholder(value)
        ):
            yield label, match.span("secret")
    for match in _HTPASSWD.finditer(text):
        args = match.group("args")
        words = [(m.group(), m.start()) for m in _ARG.finditer(args)]
        flags = "".join(word[1:] for word, _ in words if word.startswith("-"))
        positional = [(word, at) for word, at in words if not word.startswith("-")]
        if "b" not in flags:
            continue
        needed = 2 if "n" in flags else 3
        if len(positional) >= needed:
            word, at = positional[needed - 1]
            value = word.strip("\"'")
            if not _is_template(value) and not _is_placeholder(value) and len(value) >= 4:
                start = match.start("args") + at + (len(word) - len(word.lstrip("\"'")))
                yield label, (start, start + len(value))


_ARG = re.compile(r"[^\s]++")


_PROSE_KEYWORD = r"(?<![A-Za-z0-9_])(?:pass(?:word|wd|phrase|code)|pwd?)s?"
# A run longer than 64 characters is no password someone wrote in a sentence.
# After the verb or colon: spaces, or a line break ("the password is\nX").
_PROSE_GAP = r"(?:[ \t]{1,3}+|[ \t]{0,3}+\r?\n[ \t]{0,8}+)"
_PROSE_VALUE = r"[\"'`]?(?P<secret>[^\s\"'`]{6,64}+)(?![^\s\"'`])"
# "the wifi password is hunter2!42", "the password for the staging db was Tr0ub4dor&3",
# "smtp password for mailgun: ...": up to six words of context, a verb or a colon,
# then the value.
_PROSE_PASSWORD = re.compile(
    _PROSE_KEYWORD
    + r"(?P<context>(?:[ \t]{1,3}+(?!(?:is|was|are|were)\b)[A-Za-z0-9_'@.-]{1,40}+){0,6}?)"
    r"(?:[ \t]{1,3}+(?:(?:(?:is|was|has[ \t]{1,3}+been)[ \t]{1,3}+)?"
    r"(?:changed|set|reset|updated)[ \t]{1,3}+to|is|was|are|were|became)"
    r"(?:[ \t]{1,3}+(?:now|still|just|currently|simply|literally))?"
    r"|[ \t]{0,3}+(?P<colon>:))" + _PROSE_GAP + _PROSE_VALUE,
    re.IGNORECASE | re.ASCII,
)
# "ssh deploy@10.0.0.5 with password Winter2024!", "user x, pass ...": with no verb
# only a value that can be nothing but a password counts.
_PROSE_PASSWORD_DIRECT = re.compile(
    r"(?:" + _PROSE_KEYWORD + r"|(?<![A-Za-z0-9_-])pass)[ \t]{1,3}+" + _PROSE_VALUE,
    re.IGNORECASE | re.ASCII,
)
# The same in German, French, Spanish, Portuguese, Italian and Russian: "WLAN-Passwort
# fürs Büro: ...", "le mot de passe est ...", "la contraseña es ...", "a senha é ...",
# "la password è ...", "пароль: ...". Context words may be any letters.
_FOREIGN_VERB = r"(?:ist|war|lautet|est|était|es|era|é|è|era|foi)(?!\w)"
_FOREIGN_PROSE = re.compile(
    r"(?<!\w)(?:passwort|kennwort|mot[ \t]de[ \t]passe|contrase[ñn]a|senha|пароль|password)"
    r"(?P<context>(?:[ \t]{1,3}+(?!" + _FOREIGN_VERB + r")[\w'@.-]{1,40}+){0,6}?)"
    r"(?:[ \t]{1,3}+" + _FOREIGN_VERB + r"|[ \t]{0,3}+(?P<colon>:))" + _PROSE_GAP + _PROSE_VALUE,
    re.IGNORECASE,
)
# With no verb: "Benutzer admin, Kennwort Z3ZO...", "login x, mdp : CPtH...",
# "usuario soporte / clave fzGO...": the word, at most a colon, then a value that
# can be nothing but a password.
_FOREIGN_DIRECT = re.compile(
    r"(?<!\w)(?:passwort|kennwort|mot[ \t]de[ \t]passe|mdp|contrase[ñn]a|clave|senha|parola"
    r"|wachtwoord|lösenord|пароль|has[łl]o|[şs]ifre(?:si|niz)?+|parolas[ıi])"
    r"(?:[ \t]{0,3}+:)?+[ \t]{1,3}+" + _PROSE_VALUE,
    re.IGNORECASE,
)
# Dutch, Polish, Turkish and Japanese, whose connectors differ: "het wachtwoord voor de
# beheerder is ...", "hasło do bazy to ...", "sunucu şifresi: ...", "パスワードは ... です".
_OTHER_VERB = r"(?:is|was|to|jest|by[łl]o|は|が)(?!\w)"
_OTHER_PROSE = re.compile(
    r"(?:(?<!\w)(?:wachtwoord|has[łl]o|[şs]ifre(?:si|niz)?+|parola(?:s[ıi])?+)|パスワード)"
    r"(?P<context>(?:[ \t]{1,3}+(?!" + _OTHER_VERB + r")[\w'@.-]{1,40}+){0,6}?)"
    r"(?:[ \t]{0,3}+" + _OTHER_VERB + r"|[ \t]{0,3}+(?P<colon>[:：]))" + _PROSE_GAP + _PROSE_VALUE,
    re.IGNORECASE,
)
# Words in CamelCase (ResetPassword) or capitals; a mix that is neither reads as random.
_CAMEL_WORDS = re.compile(r"(?:[A-Z]?[a-z]{2,}+)++|[A-Z]++(?:[a-z]{2,}+)?+")
_SEPARATOR = re.compile(r"[-_.]")


def _random_letters(value: str) -> bool:
    """Letters mixing cases at random (``fzGOABJwkwqcgcyNb``, ``CPtHCLStjb-Hpy``), 10+
    of them, perhaps split by - _ or .: no word in CamelCase or capitals reads so."""
    value = value.rstrip(".,;:)")
    pieces = _SEPARATOR.split(value)
    return (
        len(value) >= 10
        and all(piece.isascii() and piece.isalpha() for piece in pieces)
        and _LOWER.search(value) is not None
        and _UPPER.search(value) is not None
        and not all(_CAMEL_WORDS.fullmatch(piece) for piece in pieces)
        and not _is_placeholder(value)
        and not _is_technical(value)
    )


# "login is admin / Sup3rS3cret!", "credentials: deploy:Tr0ub4dor&3".
_LOGIN_PAIR = re.compile(
    r"(?<![A-Za-z0-9_])(?:log[ -]?in|creds|credentials"
    r"|user(?:name)?[ \t]{0,3}+/[ \t]{0,3}+pass(?:word)?)"
    r"(?:[ \t]{1,3}+(?:is|are|was|were|with)[ \t]{1,3}+|[ \t]{0,3}+[:=][ \t]{0,3}+)"
    r"[A-Za-z0-9._@+-]{1,64}+[ \t]{0,3}+[/:][ \t]{0,3}+[\"'`]?(?P<secret>[^\s\"'`,;]{8,64}+)",
    re.IGNORECASE | re.ASCII,
)
# "docker login -u ci -p ...": a password flag on a login command line.
_LOGIN_FLAG = re.compile(
    r"(?<![A-Za-z0-9_-])login[ \t](?:[^\s|;&][^\n|;&]{0,120}?[ \t])?-p[ \t]{1,3}+"
    r"[\"']?(?P<secret>[^\s\"']{6,64}+)",
    re.ASCII,
)
# "use admin / Adm1n!2025", "try root / S3cure-pw9": a verb, a user, a password.
_VERB_PAIR = re.compile(
    r"(?<![A-Za-z0-9_])(?:use|using|try|creds|credentials)[ \t]{1,3}+[A-Za-z0-9._@+-]{1,64}+"
    r"[ \t]{1,3}+/[ \t]{1,3}+[\"'`]?(?P<secret>[^\s\"'`,;]{8,64}+)",
    re.IGNORECASE | re.ASCII,
)
# "keycloak admin / K3ycl0ak!Adm": a user name and, with no verb, a password that
# can be nothing else (a letter, a digit and a symbol).
_STRONG_PAIR = re.compile(
    r"(?<![A-Za-z0-9_./-])[a-z][a-z0-9._-]{1,31}+[ \t]{1,3}+/[ \t]{1,3}+[\"'`]?"
    r"(?P<secret>[^\s\"'`,;]{8,64}+)",
    re.ASCII,
)
# A credential flag on a command line, its value after a space or "=":
# --client-secret X, --token X, --api-key=X, -passout pass:X.
_CLI_FLAG = re.compile(
    r"(?<![A-Za-z0-9_-])--?+(?:[A-Za-z0-9]{1,20}+-){0,4}"
    r"(?:pass(?:word|wd|phrase|in|out)?|pwd|secret|token"
    r"|(?:api|app|access|secret|private|client|auth)-?key)"
    r"(?:[ \t]{1,3}+|(?P<eq>=))(?P<quote>[\"']?)(?P<secret>[^\s\"']{6,256}+)",
    re.IGNORECASE | re.ASCII,
)
# <password>...</password>, <apiKey>...</apiKey>, <token>...</token>.
_XML_ELEMENT = re.compile(
    r"<(?P<name>[A-Za-z_][A-Za-z0-9_.:-]{0,60}+)[ \t]*+>(?P<secret>[^<>\r\n]{1,256}+)"
    r"</(?P=name)[ \t]*+>",
    re.ASCII,
)
_TOKEN_NAME = re.compile(r"token$", re.IGNORECASE)
# A credential named and followed by a long random value, with no "=" needed:
# "datadog api key 55bd51f0...", "the CI variable AWS_SECRET_ACCESS_KEY is MJ8P...",
# "the bot token for staging is ...".
_NAMED_TOKEN = re.compile(
    r"(?<![A-Za-z0-9])(?:" + _KEYWORDS + r"|token|pat|psk"
    r"|(?:app|application|access|secret|master|(?:pre[ ._-]?)?shared)[ ._-]?key)"
    r"(?P<tail>[A-Za-z0-9_]{0,40}+)"
    # Context words may carry brackets and commas: "PAT for the job (full access, sorry):".
    r"(?:(?P<context>(?:[ \t]{1,3}+(?!(?:is|was)\b)[A-Za-z0-9_.,()-]{1,30}+){0,8}?)"
    r"(?:[ \t]{1,3}+(?:is|was)(?:[ \t]{1,3}+now)?[ \t]{1,3}+|[ \t]{0,3}+[:=][ \t]{0,3}+)"
    # NAME_TOKEN=value needs no space after "=".
    r"|[ \t]{0,3}+[:=][ \t]{0,3}+|[ \t]{1,3}+)"
    r"[\"'`]?(?P<secret>[A-Za-z0-9_+/.=-]{16,256}+)",
    re.IGNORECASE | re.ASCII,
)
_HEX = re.compile(r"[0-9a-fA-F-]++")
# The prefixes of the tokens the shapes know; such a value is left to its shape,
# which names it better (and finds it joined when it was split).
_TOKEN_PREFIXES = (
    r"eyJ|LS0tLS1CRUdJTi|gh[pousr]_|github_pat_|glpat-|sk-|[sr]k_live_|whsec_|xox[abprs]-"
    r"|AIza|GOCSPX-|npm_|pypi-|hf_|SG\.|do[por]_v1_|AKIA|ASIA"
    r"|gl(?:rt|dt|ptt|ft|cbt|soat)-|shp(?:at|ca|pa|ss)_|PMAK-|sq0(?:atp|csp)-|xkeysib-|gsk_"
    r"|ATATT3|AGE-SECRET-KEY-1|NRAK-|dp\.(?:st|ct|pt|sa)\.|tskey-|dckr_(?:pat|oat)_|dapi[a-f0-9]"
)
_KNOWN_PREFIX = re.compile(_TOKEN_PREFIXES)
_BASE36 = re.compile(r"[a-z0-9]++")
# Context that makes the sentence about something other than the password's value:
# "the password hash is 5f4dcc3b...", "the password policy is 12 characters".
_ABOUT_THE_PASSWORD = frozenset(
    [
        "hash",
        "hashes",
        "digest",
        "length",
        "policy",
        "policies",
        "hint",
        "reset",
        "manager",
        "field",
        "rule",
        "rules",
        "requirement",
        "requirements",
        "expiry",
        "expiration",
        "age",
        "prompt",
        "file",
        "path",
        "salt",
        "strength",
        "complexity",
        "history",
        "format",
        "algorithm",
        "scheme",
        "column",
        "type",
        "regex",
        "pattern",
        "limit",
        "minimum",
        "maximum",
        "generator",
        "encoding",
        "prefix",
    ]
)
# Words that make a named value something other than the credential: "the password
# digest is 8d96...", "api key id 1234...".
_ABOUT_THE_TOKEN = _ABOUT_THE_PASSWORD | {
    "id",
    "ids",
    "checksum",
    "fingerprint",
    "sha",
    "sha1",
    "sha256",
    "md5",
    "name",
    "header",
    "version",
}
# Words with digits that describe how a password is kept or how long it is
# ("sha256-hashed", "aes-256-gcm", "16-chars"): not a password.
_TECHNICAL = frozenset(
    [
        "argon2",
        "argon2i",
        "argon2id",
        "bcrypt",
        "scrypt",
        "pbkdf2",
        "sha",
        "sha1",
        "sha2",
        "sha256",
        "sha384",
        "sha512",
        "sha3",
        "md5",
        "hmac",
        "aes",
        "aes128",
        "aes256",
        "gcm",
        "cbc",
        "rsa",
        "ed25519",
        "x25519",
        "base32",
        "base64",
        "hex",
        "utf",
        "utf8",
        "ascii",
        "2fa",
        "mfa",
        "totp",
        "hotp",
        "otp",
        "u2f",
        "fido2",
        "webauthn",
        "pkcs",
        "pkcs8",
        "pkcs12",
        "x509",
        "tls",
        "ssl",
        "oauth2",
        "ipv4",
        "ipv6",
        "bit",
        "bits",
        "byte",
        "bytes",
        "char",
        "chars",
        "characters",
        "digits",
        "encoded",
        "salted",
        "protected",
        "based",
        "generated",
        "random",
        "long",
        "min",
        "max",
    ]
)
_TECHNICAL_SPLIT = re.compile(r"[-_./+]")
_VERSION = re.compile(r"v?[0-9]+")
_LETTER = re.compile(r"[A-Za-z]")
# Not brackets: "(optional)" is prose.
_SYMBOL = re.compile(r"[!@#$%^&*+=?~|\\]")
_EMAIL = re.compile(r"[^@\s]{1,64}+@[A-Za-z0-9-]{1,63}+(?:\.[A-Za-z0-9-]{1,63}+)++")
# Values that stand for a credential in examples: PASSWORD, xxxxxxxx, <token>,
# yourpassword.
_PLACEHOLDER = re.compile(r"[A-Z_]++|[xX*.]++|(?i:your|my)[-_A-Za-z]*+|<[^>]*+>")


def _is_placeholder(value: str) -> bool:
    return (
        _is_reference(value)
        or _is_env_name(value)
        or _PLACEHOLDER.fullmatch(value) is not None
        or _is_example(value)
    )


def _is_technical(value: str) -> bool:
    words = [word for word in _TECHNICAL_SPLIT.split(value.lower()) if word]
    return all(
        word in _TECHNICAL or word in _DESCRIBING or _VERSION.fullmatch(word) for word in words
    )


# Pure, and called again for the same words when a flag or keyword repeats.
@functools.lru_cache(maxsize=1024)
def _prose_value_is_secret(value: str, strict: bool) -> bool:
    """Whether a value named in prose reads as a password: it has a letter, a digit,
    and a symbol or both cases; or (not ``strict``) it is 8 characters or more with
    a letter and a digit or symbol. And it is none of the things a sentence about a
    password names instead."""
    value = value.rstrip(".,;:)")
    if len(value) < _MIN_PROSE_VALUE or _LETTER.search(value) is None:
        return False
    if (
        _is_placeholder(value)
        or _is_description(value)
        or _is_technical(value)
        or _names_a_credential(value)
        or _EMAIL.fullmatch(value)
        or _is_path(value)
        or _URL.match(value)
        or _DATE.fullmatch(value)
        or _is_code(value)
    ):
        return False
    digit, symbol = _has_digit(value), _SYMBOL.search(value) is not None
    mixed = _LOWER.search(value) is not None and _UPPER.search(value) is not None
    if digit and (symbol or mixed):
        return True
    return not strict and len(value) >= _MIN_VALUE and (digit or symbol)


def _flag_value_is_secret(value: str, dash: bool = False) -> bool:
    """Whether the value of a credential flag (``--token X``, ``curl -u user:X``) reads
    as one: not another flag, a key=value list (``--secret id=npmrc,src=.npmrc``), a
    placeholder, or a word ("pass --token explicitly")."""
    value = value.removeprefix("pass:")
    return (
        (dash or not value.startswith("-"))
        and "=" not in value.rstrip("=")
        and not _is_placeholder(value)
        and _prose_value_is_secret(value, strict=False)
    )


def _looks_random(value: str) -> bool:
    """Whether a value named without ``=`` reads as a generated token: 16+ characters
    mixing cases and digits, 20+ of hex, or 24+ of lowercase letters and 4+ digits; and
    none of the things a sentence names instead."""
    value = value.rstrip(".,;:)")
    if len(value) < 16 or _LETTER.search(value) is None or not _has_digit(value):
        return False
    if _KNOWN_PREFIX.match(value) is not None:
        return False
    if (
        _is_placeholder(value)
        or _is_path(value)
        or _URL.match(value)
        or _DATE.fullmatch(value)
        or _is_code(value)
        or _is_technical(value)
    ):
        return False
    if _LOWER.search(value) is not None and _UPPER.search(value) is not None:
        return True
    if _HEX.fullmatch(value) is not None:
        return len(value.replace("-", "")) >= 20
    return (
        _BASE36.fullmatch(value) is not None
        and len(value) >= 24
        and len(_DIGIT.findall(value)) >= 4
    )


def _value_span(match: re.Match[str]) -> tuple[int, int]:
    """The value's span without the punctuation that ends a sentence."""
    start = match.start("secret")
    return start, start + len(match.group("secret").rstrip(".,;:)"))


def _prose_passwords(text: str) -> Iterable[tuple[str, tuple[int, int]]]:
    """Yield the label and value span of every password named in a sentence."""
    for match in _PROSE_PASSWORD.finditer(text):
        context = match.group("context").lower().split()
        # "password: ..." with no context is an assignment, judged as one; but
        # the assignment stops a value at "&" (a query string), so a value that can
        # be nothing but a password counts here too ("new ssh password: 7Seas&Salt").
        strict = bool(match.group("colon")) and not context
        if not _ABOUT_THE_PASSWORD.intersection(context) and _prose_value_is_secret(
            match.group("secret"), strict=strict
        ):
            yield "password in prose", _value_span(match)
    for match in _FOREIGN_PROSE.finditer(text):
        context = match.group("context").split()
        strict = bool(match.group("colon")) and not context
        if _prose_value_is_secret(match.group("secret"), strict=strict):
            yield "password in prose", _value_span(match)
    for match in _OTHER_PROSE.finditer(text):
        strict = bool(match.group("colon")) and not match.group("context").split()
        if _prose_value_is_secret(match.group("secret"), strict=strict):
            yield "password in prose", _value_span(match)
    for match in _PROSE_PASSWORD_DIRECT.finditer(text):
        if _prose_value_is_secret(match.group("secret"), strict=True) or _random_letters(
            match.group("secret")
        ):
            yield "password in prose", _value_span(match)
    for match in _FOREIGN_DIRECT.finditer(text):
        value = match.group("secret")
        if _prose_value_is_secret(value, strict=True) or _random_letters(value):
            yield "password in prose", _value_span(match)
    for match in _LOGIN_PAIR.finditer(text):
        if _prose_value_is_secret(match.group("secret"), strict=False):
            yield "login and password", _value_span(match)
    for match in _LOGIN_FLAG.finditer(text):
        if _prose_value_is_secret(match.group("secret"), strict=True):
            yield "login and password", _value_span(match)
    for match in _VERB_PAIR.finditer(text):
        if _prose_value_is_secret(match.group("secret"), strict=True):
            yield "login and password", _value_span(match)


def _strong_pairs(text: str) -> Iterable[tuple[str, tuple[int, int]]]:
    """Yield the value span of every ``user / password`` pair whose password has a
    letter, a digit and a symbol."""
    for match in _STRONG_PAIR.finditer(text):
        value = match.group("secret").rstrip(".,;:)")
        if (
            len(value) >= _MIN_VALUE
            and _SYMBOL.search(value) is not None
            and _prose_value_is_secret(value, strict=True)
        ):
            yield "login and password", _value_span(match)


def _named_values(text: str) -> Iterable[tuple[str, tuple[int, int]]]:
    """Yield the kind and value span of credentials named by a command-line flag or an
    XML element, or named in a sentence and followed by a long random value."""
    pos = 0 if "-" in text else len(text)
    while (match := _CLI_FLAG.search(text, pos)) is not None:
        # A value quoted after "=" (--password='-B_q...') is no other flag, whatever
        # it starts with.
        dash = bool(match.group("eq") and match.group("quote"))
        if _flag_value_is_secret(match.group("secret"), dash):
            yield "credential on a command line", _value_span(match)
            pos = match.end()
        else:
            # The value may be the next flag (--with-token --token X).
            pos = match.start("secret")
    if "</" in text:
        for match in _XML_ELEMENT.finditer(text):
            name, raw = match.group("name"), match.group("secret")
            value = raw.strip()
            keyword = _KEYWORD.search(name)
            if (
                (keyword is not None or _TOKEN_NAME.search(name) is not None)
                and not name.lower().endswith(_METADATA_SUFFIXES)
                and (_value_is_secret(value) or _prose_value_is_secret(value, strict=True))
            ):
                kind = _KIND_BY_KEYWORD[keyword.group()[:3].lower()] if keyword else "token"
                start = match.start("secret") + len(raw) - len(raw.lstrip())
                yield f"{kind} in XML", (start, start + len(value))
    sealed_at = _sealed_at(text)
    for match in _NAMED_TOKEN.finditer(text):
        about = f"{match.group('tail')} {match.group('context') or ''}".lower()
        before = _name_before(text, match.start()).lower()
        if (
            not _ABOUT_THE_TOKEN.intersection(_WORD_SPLIT.split(about))
            # next_page_token, csrf_token, cache_key: a key of data, not a credential.
            and not _DATA_KEY_WORDS.intersection(_WORD_SPLIT.split(before))
            and _looks_random(match.group("secret"))
            and not match.group("secret").startswith(_PUBLIC_TOKEN_PREFIXES)
            and not _sealed(text, sealed_at, match.start("secret"), match.group("secret"))
            and not _inside_reference(text, match.start())
            and not _negated(text, match.start())
        ):
            yield "named token", _value_span(match)


# A call whose first string argument names a credential and whose second is its value:
# PHP's define('DB_PASSWORD', '...'), putenv-like setters, config.set("api_key", "...").
_CALL_PAIR = re.compile(
    r"\([ \t]{0,3}+(?P<q1>[\"'])(?P<name>[A-Za-z_][A-Za-z0-9_.-]{0,63}+)(?P=q1)[ \t]{0,3}+,"
    r"[ \t]{0,3}+(?P<q2>[\"'])(?P<secret>[^\"'\r\n]{1,256}+)(?P=q2)[ \t]{0,3}+[),]",
    re.ASCII,
)
_STRING_ARG = r"(?:\"[^\"\r\n]{0,256}+\"|'[^'\r\n]{0,256}+')[ \t]{0,3}+,[ \t]{0,3}+"
# Connection calls whose third argument is the password: PDO (dsn, user, password), JDBC's
# getConnection (url, user, password), mysqli (host, user, password).
_CONNECT_CALL = re.compile(
    r"(?<![A-Za-z0-9_])(?:new[ \t]{1,3}+(?:PDO|mysqli)|getConnection|mysqli_connect"
    r"|mysql_connect)[ \t]{0,3}+\([ \t]{0,3}+"
    + _STRING_ARG
    + _STRING_ARG
    + r"(?P<q>[\"'])(?P<secret>[^\"'\r\n]{1,256}+)(?P=q)",
    re.ASCII,
)


def _call_pairs(text: str) -> Iterable[tuple[str, tuple[int, int]]]:
    """Yield the value span of a credential passed by name to a call."""
    for match in _CALL_PAIR.finditer(text):
        name, value = match.group("name"), match.group("secret")
        keyword = _KEYWORD.search(name)
        word = None if keyword else _credential_word(name)
        if name.lower().endswith(_METADATA_SUFFIXES):
            continue
        if keyword is not None or word in _PASSWORD_WORDS:
            secret = _value_is_secret(value) and (
                word not in _WEAK_WORDS or _prose_value_is_secret(value, strict=False)
            )
        else:
            secret = word is not None and _random_value(value)
        if secret:
            yield "credential passed by name", match.span("secret")


def _connect_calls(text: str) -> Iterable[tuple[str, tuple[int, int]]]:
    """Yield the span of the password given as a connection call's third argument."""
    for match in _CONNECT_CALL.finditer(text):
        value = match.group("secret")
        if (
            len(value) >= _MIN_PROSE_VALUE
            and not _is_template(value)
            and not _is_placeholder(value)
            and not _is_code(value)
        ):
            yield "password in a connection call", match.span("secret")


def _key_values(text: str) -> Iterable[tuple[str, tuple[int, int]]]:
    """Yield the kind and value span of every key/value pair whose value is a secret."""
    for match in _KEY_VALUE.finditer(text):
        name = match.group("name")
        keyword = _KEYWORD.search(name)
        group = next(g for g in ("dq", "sq", "bare") if match.group(g) is not None)
        if (
            keyword is not None
            and not name.lower().endswith(_METADATA_SUFFIXES)
            and _value_is_secret(match.group(group))
        ):
            yield f"{_KIND_BY_KEYWORD[keyword.group()[:3].lower()]} assignment", match.span(group)


def _shape_matches(shape: _Shape, text: str) -> Iterable[re.Match[str]]:
    for match in shape.pattern.finditer(text):
        if shape.accept is None or shape.accept(match):
            yield match


# The assignment keywords all contain one of these.
_ASSIGNMENT_NEEDLES = ("pass", "secret", "api", "token", "private")
# The keywords of the flags, elements and named tokens.
_NAMED_NEEDLES = (*_ASSIGNMENT_NEEDLES, "pwd", "key", "pat", "psk")
_PROSE_NEEDLES = (
    "pass",
    "pw",
    "log",
    "cred",
    "user",
    "use",
    "try",
    "kennwort",
    "contrase",
    "senha",
    "mdp",
    "clave",
    "parola",
    "wachtwoord",
    "lösenord",
    "has",
    "ifre",
)
# Lowercase Cyrillic and Japanese, which the other needles, all ASCII, never meet.
_CYRILLIC_NEEDLES = ("пароль", "パスワード")


# The needles of the checks besides the shapes, all looked for in the lowercased text
# but the strong pairs' separators. The checks' own patterns decide; a needle only
# lets a text without any skip the check.
_CASED_NEEDLES = _needle_table(folded=False, checks={"strong pairs": (" / ", "\t/", "/\t")})
_FOLDED_NEEDLES = _needle_table(
    folded=True,
    checks={
        "assignments": _ASSIGNMENT_NEEDLES,
        "named values": _NAMED_NEEDLES,
        "named assignments": _NAME_HINTS,
        "connect calls": ("connect", "pdo"),
        "prose passwords": (*_PROSE_NEEDLES, *_CYRILLIC_NEEDLES),
        "command passwords": _COMMAND_NEEDLES,
    },
)


def _findings(text: str) -> Iterable[tuple[str, tuple[int, int]]]:
    """Yield the label and the span to withhold of every credential in ``text``."""
    chosen = _CASED_NEEDLES.selected(text) | _FOLDED_NEEDLES.selected(text.lower())
    # The shapes in their order, then the checks: the first finding names the refusal.
    for position in sorted(_NEEDLELESS.union(p for p in chosen if isinstance(p, int))):
        shape = _SHAPES[position]
        if shape is _PEM:
            # The whole block, not only its header.
            yield from ((shape.label, span) for span in _pem_spans(text))
            continue
        group = "secret" if "secret" in shape.pattern.groupindex else 0
        for match in _shape_matches(shape, text):
            if _MASK_RUN.search(match.group(group)) is None:
                yield shape.label, match.span(group)
    if "assignments" in chosen:
        yield from _assignments(text)
        yield from _key_values(text)
    if "named values" in chosen:
        yield from _named_values(text)
    if "named assignments" in chosen:
        yield from _named_assignments(text)
        if "(" in text:
            yield from _call_pairs(text)
    if "connect calls" in chosen:
        yield from _connect_calls(text)
    if "prose passwords" in chosen:
        yield from _prose_passwords(text)
    if "command passwords" in chosen:
        yield from _command_passwords(text)
    if "strong pairs" in chosen:
        yield from _strong_pairs(text)


# Characters that render as nothing, so they can sit inside a token unseen: the
# format characters (Unicode category Cf: zero-width space and joiners, bidi
# controls, the soft hyphen, the BOM) and the other default-ignorable ones
# (combining grapheme joiner, Hangul fillers, variation selectors).
_INVISIBLE = re.compile(
    "[\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e\u200b-\u200f"
    "\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd"
    "\U00013430-\U00013438\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001"
    "\U000e0020-\U000e007f"
    "\u034f\u115f\u1160\u180b-\u180d\u3164\ufe00-\ufe0f\uffa0]"
)
# Cyrillic and Greek letters drawn like Latin ones (NFKC leaves them be).
_HOMOGLYPHS = str.maketrans(
    "аеорсухіјѕһԁԛԝӏ"  # Cyrillic lowercase
    "АВЕКМНОРСТУХІЈЅԚԜҮ"  # Cyrillic uppercase
    "ΑΒΕΖΗΙΚΜΝΟΡΤΥΧ"  # Greek uppercase
    "οιυνκρα",  # Greek lowercase
    "aeopcyxijshdqwlABEKMHOPCTYXIJSQWYABEZHIKMNOPTYXoiuvkpa",
)
_NON_ASCII = re.compile(r"[^\x00-\x7f]++")

# A token broken over lines or by spaces: it starts with a known prefix and goes on
# in pieces that are not words (a word ends the token). The lookbehind excludes the
# first piece's alphabet, so each piece is scanned once; "=" ends a name
# (id_token=eyJ...) as well as a base64 token, hence only at the end.
_SPLIT_START = re.compile(
    r"(?<![A-Za-z0-9_.+/-])(?:" + _TOKEN_PREFIXES + r")[A-Za-z0-9_.+/-]*+={0,2}+(?=[ \t\r\n])"
)
_SPLIT_GAP = re.compile(r"[ \t]{0,8}+(?:\r?\n[ \t]{0,8}+)?")
_SPLIT_PIECE = re.compile(r"[A-Za-z0-9_.+/=-]++")
_WORD_PIECE = re.compile(r"(?:[A-Z]?[a-z]{1,40}+|[0-9]{1,3}+)\.?")
_MAX_JOINED = 8192
# A token typed one character at a time with a space between ("g h p _ E E h V ..."):
# 16 or more single characters, each followed by one space or tab.
_SPACED = re.compile(r"(?<!\S)(?:\S[ \t]){15,}\S(?!\S)")


class _Layer:
    """One step of normalisation: a new text made of pieces of an old one, and the
    way back from a position in the new text to one in the old."""

    __slots__ = ("_copied", "_origins", "_pieces", "_starts", "length")

    def __init__(self) -> None:
        self._pieces: list[str] = []
        self._starts: list[int] = []
        self._origins: list[int] = []
        self._copied: list[bool] = []
        self.length = 0

    def add(self, piece: str, origin: int, copied: bool = True) -> None:
        """Append ``piece``: the old text from ``origin`` on, character for character
        when ``copied``, else what the one old character at ``origin`` became."""
        if not piece:
            return
        self._pieces.append(piece)
        self._starts.append(self.length)
        self._origins.append(origin)
        self._copied.append(copied)
        self.length += len(piece)

    def text(self) -> str:
        return "".join(self._pieces)

    def old(self, position: int) -> int:
        """The old position of the character at ``position`` of the new text."""
        i = bisect_right(self._starts, position) - 1
        return self._origins[i] + (position - self._starts[i] if self._copied[i] else 0)


@dataclass(frozen=True, slots=True)
class _Normalised:
    """The text detection reads besides the original, and the way back to it."""

    text: str
    layers: tuple[_Layer, ...]

    def original(self, span: tuple[int, int]) -> tuple[int, int]:
        """The span of the original text that ``span`` of this one came from."""
        first, last = span[0], max(span[0], span[1] - 1)
        for layer in reversed(self.layers):
            first, last = layer.old(first), layer.old(last)
        return first, last + 1


@functools.lru_cache(maxsize=4096)
def _normalised_char(char: str) -> str:
    """What one non-ASCII character becomes: nothing if invisible, else its NFKC form
    with homoglyphs folded."""
    if _INVISIBLE.match(char) is not None:
        return ""
    return unicodedata.normalize("NFKC", char).translate(_HOMOGLYPHS)


def _unicode_layer(text: str) -> _Layer | None:
    """NFKC, invisible characters dropped and homoglyphs folded; None if that changes
    nothing. Only non-ASCII runs are looked at, and a run that needs none of it is
    copied whole."""
    layer = _Layer()
    changed = False
    cursor = 0
    for run in _NON_ASCII.finditer(text):
        layer.add(text[cursor : run.start()], cursor)
        folded = run.group().translate(_HOMOGLYPHS)
        if unicodedata.is_normalized("NFKC", folded) and _INVISIBLE.search(folded) is None:
            layer.add(folded, run.start())
            changed = changed or folded != run.group()
        else:
            changed = True
            # Character by character, so that each maps back; NFKC may expand one
            # character into several (the ligature "ﬁ" into "fi"). Characters that
            # each become one character map back one for one, so a stretch of them
            # is one piece.
            stretch: list[str] = []
            stretch_start = run.start()
            for position, char in enumerate(run.group(), run.start()):
                new = _normalised_char(char)
                if len(new) == 1:
                    if not stretch:
                        stretch_start = position
                    stretch.append(new)
                    continue
                layer.add("".join(stretch), stretch_start)
                stretch = []
                layer.add(new, position, copied=False)
            layer.add("".join(stretch), stretch_start)
        cursor = run.end()
    layer.add(text[cursor:], cursor)
    return layer if changed else None


def _split_layer(text: str) -> _Layer | None:
    """The text with the whitespace inside a split token removed; None if there is none."""
    layer: _Layer | None = None
    cursor = pos = 0
    while (start := _SPLIT_START.search(text, pos)) is not None:
        end = start.end()
        while end - start.start() < _MAX_JOINED:
            gap = _SPLIT_GAP.match(text, end)
            piece = _SPLIT_PIECE.match(text, gap.end()) if gap is not None else None
            if gap is None or piece is None or gap.end() == end:
                break
            if _WORD_PIECE.fullmatch(piece.group()) is not None:
                break
            layer = layer or _Layer()
            layer.add(text[cursor:end], cursor)
            cursor, end = gap.end(), piece.end()
        pos = end
    if layer is None:
        return None
    layer.add(text[cursor:], cursor)
    return layer


def _spaced_layer(text: str) -> _Layer | None:
    """The text with the spaces inside runs of single spaced characters removed; None
    if there is none."""
    layer: _Layer | None = None
    cursor = 0
    for run in _SPACED.finditer(text):
        layer = layer or _Layer()
        layer.add(text[cursor : run.start()], cursor)
        for position in range(run.start(), run.end(), 2):
            layer.add(text[position], position)
        cursor = run.end()
    if layer is None:
        return None
    layer.add(text[cursor:], cursor)
    return layer


def _normalise(text: str) -> _Normalised | None:
    """What detection reads besides ``text`` itself, or None when that is ``text``.

    Pure ASCII text with no token followed by whitespace costs one scan.
    """
    layers: list[_Layer] = []
    current = text
    if not text.isascii() and (layer := _unicode_layer(text)) is not None:
        layers.append(layer)
        current = layer.text()
    if " " in current and (layer := _spaced_layer(current)) is not None:
        layers.append(layer)
        current = layer.text()
    if (layer := _split_layer(current)) is not None:
        layers.append(layer)
        current = layer.text()
    return _Normalised(current, tuple(layers)) if layers else None


def find_secret(text: str) -> str | None:
    """Find a credential in a text.

    Args:
        text: Any writer-controlled text.

    Returns:
        A short label of the kind of credential found (``"GitHub token"``,
        ``"password assignment"``, ``"password in URL"``), or None.
    """
    for label, _span in _findings(text):
        return label
    normalised = _normalise(text)
    if normalised is not None:
        for label, _span in _findings(normalised.text):
            return label
    return None


# Short values found clear, remembered: a write's short fields (tags, source, scope,
# claim key) repeat from one trace to the next, and each costs a few microseconds of
# detection, as much as its content. Only what holds no credential is kept.
_CLEAR_MAX = 128
_CLEAR_KEPT = 8192
_clear: set[str] = set()


# Texts another process found clear with this same detector (a bulk import's
# contents, checked on the other core ahead of the writer): each let through once.
_VOUCHED_KEPT = 8192
_vouched: set[str] = set()


def vouch(texts: Iterable[str]) -> None:
    """Let each of ``texts`` through :func:`check_fields` once without detection: only
    for texts that :func:`find_secret` found clear (in another process, as a bulk
    import's are). At most a few thousand are held; more start the set afresh."""
    if len(_vouched) >= _VOUCHED_KEPT:
        _vouched.clear()
    _vouched.update(texts)


def unvouch(texts: Iterable[str]) -> None:
    """Forget the vouches for ``texts`` not taken yet: a page done, its texts are not
    kept in memory any longer than it took."""
    _vouched.difference_update(texts)


def _verdict(value: str) -> str | None:
    if value in _vouched:
        _vouched.discard(value)
        return None
    return _short_verdict(value) if len(value) <= _CLEAR_MAX else find_secret(value)


def _short_verdict(value: str) -> str | None:
    if value in _clear:
        return None
    label = find_secret(value)
    if label is None:
        if len(_clear) >= _CLEAR_KEPT:
            _clear.clear()
        _clear.add(value)
    return label


def check_fields(fields: Iterable[tuple[str, str | None]]) -> None:
    """Refuse a write whose writer-controlled fields hold a credential.

    Args:
        fields: ``(field name, value)`` pairs such as ``("content", ...)`` or
            ``("tags[2]", ...)``; None values are skipped.

    Raises:
        SecretDetected: Naming the first field that holds a credential and
            the kind found. The message never contains the value.
    """
    for field, value in fields:
        if value is None:
            continue
        label = _verdict(value)
        if label is not None:
            raise SecretDetected(
                f"{field} looks like it holds a credential ({label}); nothing was written. "
                "Keep the secret in a secret manager and store a reference such as "
                "vault:path or $ENV_VAR instead of the value."
            )


# What follows a header mentioned in a sentence: on the same line, a word or
# punctuation, not the key's base64 (a key goes on after a line break, an escaped
# "\\n", a quote or the end of the text).
_PEM_MENTIONED = re.compile(
    r"[ \t]{0,3}+(?:[.,;:!?)]|(?<=[ \t])(?![A-Za-z0-9+/=]{16}|\\n|[\r\n\"']|\Z))"
)


def _pem_spans(text: str) -> Iterable[tuple[int, int]]:
    # The whole block goes, through its END line, or to the end of the text
    # when the block was cut off. Searching on from there keeps this linear.
    pos = 0
    while (begin := _PEM_BEGIN.search(text, pos)) is not None:
        if _PEM_MENTIONED.match(text, begin.end()):
            # "a file that starts with -----BEGIN PRIVATE KEY----- must not be
            # committed": the header in a sentence, no key after it.
            pos = begin.end()
            continue
        end = _PEM_END.search(text, begin.end())
        stop = end.end() if end is not None else len(text)
        yield begin.start(), stop
        pos = stop


def redact(text: str) -> str:
    """Withhold every credential in a text, for previews in ledger reports.

    Args:
        text: Any text.

    Returns:
        The text with each credential span replaced by ``[withheld]``. An
        assignment keeps its name (``password=[withheld]``) and a URL its
        user and host. The detector finds nothing in the result, so redacting
        it again changes nothing.
    """
    for _ in range(_REDACT_PASSES):
        spans = _secret_spans(text)
        if not spans:
            return text
        text = _withhold(text, spans)
    return _WITHHELD if _secret_spans(text) else text


def preview(text: str, chars: int = PREVIEW_CHARS) -> str:
    """A text as a report may show it: redacted, on one line, at most ``chars`` long."""
    # Redact before cutting, so a credential split by the cut is still recognised.
    flat = "".join(" " if unicodedata.category(ch) in _UNPRINTABLE else ch for ch in redact(text))
    return flat if len(flat) <= chars else flat[: chars - 1] + "…"


def _secret_spans(text: str) -> list[tuple[int, int]]:
    """The spans :func:`redact` withholds, sorted; empty when :func:`find_secret` finds
    nothing."""
    spans = [span for _label, span in _findings(text)]
    normalised = _normalise(text)
    if normalised is not None:
        spans.extend(normalised.original(span) for _label, span in _findings(normalised.text))
    return sorted(spans)


def _withhold(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with each span (sorted) replaced by ``[withheld]``."""
    pieces: list[str] = []
    cursor = 0
    for first, last in spans:
        start, end = _outside_marker(text, first, 0), _outside_marker(text, last, 1)
        if end <= cursor:
            continue
        if start >= cursor:
            pieces.append(text[cursor:start])
            pieces.append(_WITHHELD)
        # An overlapping span extends the withheld region without a second
        # marker.
        cursor = end
    pieces.append(text[cursor:])
    return "".join(pieces)


def _outside_marker(text: str, position: int, side: int) -> int:
    """``position``, moved to the start (``side`` 0) or the end (1) of a marker it falls
    inside: a span found in a later pass takes the whole marker, never leaving ``[with``
    or ``]`` behind."""
    width = len(_WITHHELD)
    start = text.find(_WITHHELD, max(0, position - width + 1), position + width - 1)
    if start == -1 or start >= position:
        return position
    return start + side * width
