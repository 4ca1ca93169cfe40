"""Passwords given on a command line by a short flag after its command, and the like.

A command line: ``user:password`` after ``-u``, ``--user``, ``-a`` or
``--auth`` on the line of an HTTP client (curl, wget, HTTPie, xh) and not
after a ``|``, ``;`` or ``&``; a credential flag (a name ending in password,
pass, passphrase, pwd, secret, token, or api/app/access/secret/private/
client/auth key, after ``-`` or ``--``) and its value after a space or ``=``
(``--client-secret X``, ``-passout pass:X``). The value must read as a
password (as in prose, :mod:`.prose`, not strict) and be no other flag, no ``k=v`` list
(``--secret id=npmrc,src=.npmrc``) and no placeholder. Short password flags
count after their command on the same line: ``-p`` of mysql, mariadb,
mysqldump and the like (``-pX``; ``-p X`` only when X reads as a password
strictly, since ``mysql -p dbname`` prompts) and of sshpass, ``-a`` of
redis-cli; also the password of ``net use ... /user:X``, the string given to
PowerShell's ``ConvertTo-SecureString ... -AsPlainText``, and the last argument
of ``htpasswd -b``; ``-P`` of sqlcmd, bcp and osql, ``-w`` of the OpenLDAP
clients (ldapsearch...), the password of ``smbclient -U user%X``; and a value
quoted after ``=`` may start with ``-`` (``--password='-B_q...'``).

Of these, the HTTP client's ``user:password`` is a shape (:mod:`.shapes`) and a
credential flag is read with the other named values (:mod:`.named`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from hikmah.model.secrets.checks import CLIENT_REACH
from hikmah.model.secrets.values import (
    MIN_PROSE_VALUE,
    is_placeholder,
    is_template,
    prose_value_is_secret,
    value_span,
)

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


def _after_command(text: str, start: int, command: re.Pattern[str]) -> bool:
    """Whether ``command`` runs on the line before ``start``, not piped or chained
    away from it."""
    window = text[max(0, start - CLIENT_REACH) : start]
    window = window[window.rfind("\n") + 1 :]
    ends = [found.end() for found in command.finditer(window)]
    return bool(ends) and not any(separator in window[ends[-1] :] for separator in "|;&")


def command_passwords(text: str) -> Iterable[tuple[str, tuple[int, int]]]:
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
                and not is_template(value)
                and not is_placeholder(value)
                and prose_value_is_secret(value, strict=strict)
            ):
                yield label, value_span(match)
    for match in _SMB_USER.finditer(text):
        value = match.group("secret")
        if (
            _after_command(text, match.start(), _SMB_COMMAND)
            and len(value) >= MIN_PROSE_VALUE
            and not is_template(value)
            and not is_placeholder(value)
        ):
            yield label, match.span("secret")
    for match in _NET_USE.finditer(text):
        group = "before" if match.group("before") is not None else "after"
        value = match.group(group)
        if not is_placeholder(value) and prose_value_is_secret(value, strict=False):
            yield label, match.span(group)
    for match in _SECURE_STRING.finditer(text):
        value = match.group("secret")
        if (
            len(value) >= MIN_PROSE_VALUE
            and not is_template(value)
            and not value.startswith("$")
            and not is_placeholder(value)
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
            if not is_template(value) and not is_placeholder(value) and len(value) >= 4:
                start = match.start("args") + at + (len(word) - len(word.lstrip("\"'")))
                yield label, (start, start + len(value))


_ARG = re.compile(r"[^\s]++")
