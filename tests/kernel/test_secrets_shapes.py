"""The credential detector on the well-known shapes: each is found, alone or in prose, and
technical prose and code pass."""

from __future__ import annotations

import pytest

from hikmah.model.secrets import find_secret
from tests.kernel.secrets_cases import CREDENTIALS

# Technical prose and code that must pass.
BENIGN: list[str] = [
    # Described values, in the examples of the reference.
    "password=server-only",
    "secret: hashed_with_argon2id",
    "api_key=rotated-2026-09",
    "password=vault:db/prod",
    "password=$DB_PASSWORD",
    "api_key=TYPESAFE_API_KEY",
    "password: <your password>",
    "password: %DB_PASSWORD%",
    "password: {{ secrets.db }}",
    "password: ********",
    "password=env:DB_PASSWORD",
    "password=[redacted]",
    "password: REDACTED",
    "password=[withheld]",
    "secret: stored_in_kms",
    "api_key: set-via-dashboard",
    "password: 'see the vault entry'",
    "password: updated-2025-01-15",
    "access_token: rotated_daily_by_server",
    "client_secret: ${{ secrets.CLIENT_SECRET }}",
    "private_key: keyring:hikmah/signing",
    "password: short1",
    # Identifiers and digests.
    "commit 3f786850e387550fdab836ed7e6dc881de23001b fixed it",
    "id 123e4567-e89b-12d3-a456-426614174000",
    "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "blake3 af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262",
    "AKIA is the prefix of AWS access key ids",
    "tokens look like ghp_xxx, sk-... and eyJ...",
    "use sk-ant-api03-... from the console",
    # URLs without passwords.
    "see https://github.com/org/repo and git@github.com:org/repo.git",
    "https://host:8080/path?q=1#frag",
    "ssh://git@host:22/srv/repo.git",
    "https://user@example.com/",
    "http://[::1]:8080/health",
    "postgres://db.internal:5432/app",
    "mailto:someone@example.com",
    # Prose.
    "the password reset flow sends an email",
    "the secret is kept in vault",
    "api_key: see dashboard",
    "Password: must be at least 12 characters",
    "The API key is in 1Password.",
    "Rotate the access token monthly.",
    "Top secret: do not share",
    "passwords are hashed with argon2id",
    "the bearer of this token may call the API",
    "Authorization: Bearer <token>",
    'curl -H "Authorization: Bearer $TOKEN" https://api.example.com',
    "## Password policy\n\n- at least 12 characters\n- no reuse",
    "| name | type |\n|---|---|\n| api_key | string |",
    "token-" * 50,
    # Code without values.
    'password = os.environ["DB_PASSWORD"]',
    "password = os.getenv('DB_PASSWORD')",
    "password = getpass.getpass()",
    "secret_key = settings.SECRET_KEY",
    "api_key = self._api_key",
    "password_hash = bcrypt.hashpw(password, salt)",
    "api_key: Optional[str] = None",
    "def login(user: str, password: str) -> bool:",
    "password: str = Field(min_length=8)",
    'password = ""',
    "if not password:\n    raise ValueError('empty')",
    "secretName: db-credentials",
    "secretName: my-tls-secret",
    "PASSWORD_FILE=/run/secrets/db_password",
    "private_key_path: ~/.ssh/id_ed25519",
    "password_min_length: 12345678",
    "secret_rotated_at: 2026-09-01T00:00:00Z",
    "api_key_url=https://console.example.com/keys",
    "password: |",
    "nsswitch passwd: files systemd",
    # Variables named after the credential they carry.
    "self.password = password",
    "key_password=key_password,",
    "self._client_cert_passphrase = password",
    "refresh_token_key = 'refresh_token'",
    "self.username, self.password = credentials",
    "access_token = self.access_token",
    "EllipticCurvePrivateKeyWithSerialization = EllipticCurvePrivateKey",
    "private_key: _SSH_PRIVATE_KEY_TYPES,",
    "const apiKey = process.env.API_KEY;",
    # Documentation.
    ":param password: Password to send as authorization.",
    "    :type passphrase: :py:data:`bytes`",
    "    :param passphrase: (optional) if encrypted PEM format",
    "Args:\n    password: Password for the account.\n",
    "Password: Required",
]


@pytest.mark.parametrize(("text", "label"), CREDENTIALS)
def test_credentials_are_found(text: str, label: str) -> None:
    assert find_secret(text) == label


@pytest.mark.parametrize("text", BENIGN)
def test_technical_prose_passes(text: str) -> None:
    assert find_secret(text) is None


@pytest.mark.parametrize("text", [text for text, _label in CREDENTIALS])
def test_credential_embedded_in_prose_is_found(text: str) -> None:
    assert find_secret(f"Note for later:\n{text}\nthanks.") is not None


def test_openai_shape_needs_a_digit() -> None:
    assert find_secret("sk-" + "abcdefghijklmnopqrstuvwxyzabcdefgh") is None


def test_bearer_needs_a_digit_and_a_letter() -> None:
    assert find_secret("Bearer " + "authenticationschemedescription") is None
    assert find_secret("Bearer " + "1234567890" * 3) is None


def test_url_password_placeholders_pass() -> None:
    assert find_secret("postgres://app:$DB_PASSWORD@db/app") is None
    assert find_secret("postgres://app:<password>@db/app") is None
    assert find_secret("postgres://app:***@db/app") is None


@pytest.mark.parametrize("text", ["auth: éabcdefgh", "npm auth: café", '{"auth":\u200bsift'])
def test_a_value_that_is_not_ascii_is_checked_not_crashed_on(text: str) -> None:
    """A value checked for base64 that holds a non-ASCII character is simply not base64."""
    assert find_secret(text) is None
