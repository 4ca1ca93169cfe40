"""Passwords named in prose, in English and other languages, and login pairs.

A password named in prose: ``password`` (passwd, passphrase, passcode, pw,
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
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from hikmah.model.secrets.randomness import random_letters
from hikmah.model.secrets.values import MIN_VALUE, SYMBOL, prose_value_is_secret, value_span
from hikmah.model.secrets.words import ABOUT_THE_PASSWORD

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


def prose_passwords(text: str) -> Iterable[tuple[str, tuple[int, int]]]:
    """Yield the label and value span of every password named in a sentence."""
    for match in _PROSE_PASSWORD.finditer(text):
        context = match.group("context").lower().split()
        # "password: ..." with no context is an assignment, judged as one; but
        # the assignment stops a value at "&" (a query string), so a value that can
        # be nothing but a password counts here too ("new ssh password: 7Seas&Salt").
        strict = bool(match.group("colon")) and not context
        if not ABOUT_THE_PASSWORD.intersection(context) and prose_value_is_secret(
            match.group("secret"), strict=strict
        ):
            yield "password in prose", value_span(match)
    for match in _FOREIGN_PROSE.finditer(text):
        context = match.group("context").split()
        strict = bool(match.group("colon")) and not context
        if prose_value_is_secret(match.group("secret"), strict=strict):
            yield "password in prose", value_span(match)
    for match in _OTHER_PROSE.finditer(text):
        strict = bool(match.group("colon")) and not match.group("context").split()
        if prose_value_is_secret(match.group("secret"), strict=strict):
            yield "password in prose", value_span(match)
    for match in _PROSE_PASSWORD_DIRECT.finditer(text):
        if prose_value_is_secret(match.group("secret"), strict=True) or random_letters(
            match.group("secret")
        ):
            yield "password in prose", value_span(match)
    for match in _FOREIGN_DIRECT.finditer(text):
        value = match.group("secret")
        if prose_value_is_secret(value, strict=True) or random_letters(value):
            yield "password in prose", value_span(match)
    for match in _LOGIN_PAIR.finditer(text):
        if prose_value_is_secret(match.group("secret"), strict=False):
            yield "login and password", value_span(match)
    for match in _LOGIN_FLAG.finditer(text):
        if prose_value_is_secret(match.group("secret"), strict=True):
            yield "login and password", value_span(match)
    for match in _VERB_PAIR.finditer(text):
        if prose_value_is_secret(match.group("secret"), strict=True):
            yield "login and password", value_span(match)


def strong_pairs(text: str) -> Iterable[tuple[str, tuple[int, int]]]:
    """Yield the value span of every ``user / password`` pair whose password has a
    letter, a digit and a symbol."""
    for match in _STRONG_PAIR.finditer(text):
        value = match.group("secret").rstrip(".,;:)")
        if (
            len(value) >= MIN_VALUE
            and SYMBOL.search(value) is not None
            and prose_value_is_secret(value, strict=True)
        ):
            yield "login and password", value_span(match)
