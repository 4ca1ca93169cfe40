"""Refusing a write whose fields hold a credential, and the memos of texts found clear."""

from __future__ import annotations

from collections.abc import Iterable

from hikmah.model.errors import SecretDetected
from hikmah.model.secrets.detector import find_secret

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
    for texts that :func:`.detector.find_secret` found clear (in another process, as a
    bulk import's are). At most a few thousand are held; more start the set afresh."""
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
