"""The credential detector on assignments: a password assigned is refused, a value that
describes one is allowed, and so is one under eight characters."""

from __future__ import annotations

import pytest

from hikmah.model.secrets import find_secret


@pytest.mark.parametrize(
    "value",
    [
        "princess1",
        "summer-2024",
        "admin_pass123",
        "super-secret1",
        "ADMIN_PASS1",
        "qwerty_asdf",
        "admin_pass",
        "correct-horse-battery-staple",
        "sunshine",
        "stored-in-vault2",
    ],
)
@pytest.mark.parametrize("name", ["password", "DB_PASSWORD", "api_key", "client-secret"])
@pytest.mark.parametrize("separator", ["=", ": ", " = ", '": "'])
def test_assigned_passwords_are_refused(name: str, separator: str, value: str) -> None:
    assert find_secret(f"{name}{separator}{value}") is not None


@pytest.mark.parametrize(
    "value",
    [
        "server-only",
        "hashed_with_argon2id",
        "rotated-2026-09",
        "vault:db/prod",
        "$DB_PASSWORD",
        "TYPESAFE_API_KEY",
        "encrypted-at-rest",
        "not_set_here",
    ],
)
@pytest.mark.parametrize("name", ["password", "DB_PASSWORD", "api_key", "client-secret"])
@pytest.mark.parametrize("separator", ["=", ": ", " = ", '": "'])
def test_described_values_are_allowed(name: str, separator: str, value: str) -> None:
    assert find_secret(f"{name}{separator}{value}") is None


@pytest.mark.parametrize("value", ["hunter2", "abc", "1234567"])
def test_values_under_eight_characters_pass(value: str) -> None:
    assert find_secret(f"password={value}") is None
