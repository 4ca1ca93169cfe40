"""The credential detector on HTTP clients' passwords, XML elements, credential flags, bytes
literals, labelled JWTs, user and password pairs, named random values, Google OAuth tokens
and bare basic auth, and on their look-alikes."""

from __future__ import annotations

import pytest

from hikmah.model.secrets import find_secret, redact
from tests.kernel.secrets_cases import ALNUM, HEX, JWT, LINEAR_BOUND_S, _base64, _slowest

# Categories added after the held-out set's misses; each is a shape in general, not
# the held-out string.
RANDOM = "Zx9Kq2Lm8Np4Rt6Vw3Yb"
NEW_CATEGORIES: list[tuple[str, str]] = [
    # An HTTP client's user:password.
    ("curl -u admin:wniId91WSPIH https://es.internal:9200", "password on a command line"),
    ("curl -sS --user deploy:Xq7!mP2vL9 https://api.internal/v1", "password on a command line"),
    ("curl -uadmin:Passw0rd!x http://localhost:15672/api", "password on a command line"),
    ("http --auth bob:Tr0ub4dor3x GET https://api/x", "password on a command line"),
    ("http -a bob:Tr0ub4dor3x https://api/x", "password on a command line"),
    ("wget --http-password 9fK2mQ7xLp https://files/x.tgz", "credential on a command line"),
    ("wget --user=ana --password=Gh7#kLp2q https://files/x.tgz", "password assignment"),
    # XML elements.
    ("<password>7Hgpr2PQz0qLse!</password>", "password in XML"),
    ("<Password>s3cR3t!Pw</Password>", "password in XML"),
    ("<apiKey>" + HEX * 2 + "</apiKey>", "API key in XML"),
    ("<token> " + RANDOM + " </token>", "token in XML"),
    ("<clientSecret>Qx7pL2mN9vB4zK8w</clientSecret>", "secret in XML"),
    # Credential flags, after a space or "=".
    ("--client-secret " + RANDOM, "credential on a command line"),
    ("gh auth login --with-token --token " + RANDOM, "credential on a command line"),
    ("mytool --api-key " + HEX * 2, "credential on a command line"),
    ("vault login --password Winter2024!x", "credential on a command line"),
    ("mytool --secret 'S3cure!pass' --user admin", "credential on a command line"),
    ("openssl pkcs12 -export -passout pass:Sup3rS3cret!", "credential on a command line"),
    ("--client-secret=" + RANDOM, "secret assignment"),
    # Python bytes literals.
    ("app.secret_key = b'Odz4BlDsaMOVzfnBPpcADlsLDpNjWl2N'", "secret assignment"),
    ('api_key = B"' + RANDOM + '"', "API key assignment"),
    # base64 that starts with "/" is not a path.
    (
        'private_key: "/fUJPG5GbCh+TrXU4mS2+q1hrQN4zMhnTeUCsZb1ZOnmR/FcsSPZ2g=="',
        "private key assignment",
    ),
    (
        "signing_secret=/9j4AAQSkZJRgABAQEASABIAAD/2wBDAAMCAgMCAgMDAwMEAwMEBQgFBQQ",
        "secret assignment",
    ),
    # A JWT pasted in labelled parts.
    ("header {}.\npayload {}.\nsig {}".format(*JWT.split(".")), "JSON Web Token"),
    ("part 1: {}\npart 2: {}\npart 3: {}".format(*JWT.split(".")), "JSON Web Token"),
    # A colon after a password word with words before it; & inside the value.
    ("new ssh password: 7Seas&Salt", "password assignment"),
    # user / password pairs: after a verb, or with a password that has a symbol.
    ("use admin / Adm1n!2025 for the staging console", "login and password"),
    ("try root / R00tpass42X on the bmc", "login and password"),
    ("keycloak admin / K3ycl0ak!Adm", "login and password"),
    ("grafana admin / Gr4f@na!2025", "login and password"),
    # A credential named, then a long random value, with no "=".
    ("datadog api key 55bd51f07fb93eb3d46c71acf3e6837b", "named token"),
    ("sentry auth token " + HEX * 2, "named token"),
    ("DATADOG_APP_KEY is " + RANDOM, "named token"),
    ("the CI variable AWS_SECRET_ACCESS_KEY is " + ALNUM, "named token"),
    ("the bot token for staging is " + RANDOM + ".", "named token"),
    # Google OAuth tokens.
    ("the refresh token is 1//0vua4HgOGfXYWCgh6KJLI4X2ueNrjW1lOLYes1MQ", "Google OAuth token"),
    ("ya29." + ALNUM, "Google OAuth token"),
    # Bare base64 of user:password.
    ("auth: " + _base64("admin:2BJhKHuHWrzeXm"), "basic auth credential"),
    ("creds are Basic " + _base64("deploy:S3cret!pass"), "basic auth credential"),
]

NEW_CATEGORY_LOOK_ALIKES: list[str] = [
    # HTTP clients without a password, or with a reference.
    "curl -u $USER:$PASS https://api.example.com",
    'curl -u "${ES_USER}:${ES_PASS}" https://es:9200',
    "curl -u user:password https://x",
    "curl -u elastic https://es:9200  # prompts for the password",
    "git push -u origin feature/Login-Fix2!",
    "docker run --user 1000:1000 img",
    "echo x | grep a; other -u admin:Adm1n!2025x",
    # XML without a credential.
    "<password>${db.password}</password>",
    "<apiKey>YOUR_API_KEY</apiKey>",
    "<token>string</token>",
    "<tokenType>Bearer</tokenType>",
    "<secretName>db-creds</secretName>",
    "<privateKey>${user.home}/.ssh/id_rsa</privateKey>",
    "<secret>optional</secret>",
    # Flags without a credential.
    "pass --token explicitly when calling the CLI",
    "the --api-key option overrides the environment variable",
    "use --password-stdin instead of --password",
    "docker buildx build --secret id=npmrc,src=$HOME/.npmrc .",
    "--token-file /run/secrets/token",
    "--password --verbose",
    "--token $(cat ~/.token)",
    "--client-secret <your-client-secret>",
    "--api-key YOUR_API_KEY",
    "ansible-playbook --private-key ~/.ssh/id_ed25519 site.yml",
    # Bytes that are not credentials; paths that are paths.
    "data = b'hello world'",
    "secret: /var/lib/docker/overlay2/4f3a9c8e7d6b5a4f3e2d1c0b9a8f7e6d/merged",
    "password: /run/secrets/db_password",
    # A JWT's header alone.
    "the JWT header eyJhbGciOiJIUzI1NiJ9 says HS256",
    # Passwords named with words around, but no password.
    "new ssh password: see the vault",
    "new password: Must be 12+ chars",
    # Pairs that are not credentials.
    "use python3.11 / node18",
    "try ubuntu-22.04 / debian-12",
    "use main / release-2.4",
    "cpu / mem: 500m / 2Gi",
    "throughput / latency p99 12ms",
    "login with google / github",
    # Named values that are not credentials.
    "the api key is in 1Password",
    "the token is valid for 3600 seconds",
    "the password digest is " + HEX * 4,
    "api key id 1234567890abcdef1234",
    "idempotency key 3fa85f64-5717-4562-b3fc-2c963f66afa6",
    "cache key 9f86d081884c7d659a2feaa0c55ad015",
    "tokenizer vocab size 50257",
    "the token endpoint is https://oauth2.googleapis.com/token",
    "1//0 is how Google refresh tokens begin",
    # Code reading the environment, and header names.
    'let secret = std::env::var("APP_SECRET")?;',
    'let key = env!("API_KEY");',
    "apiKey: process.env.STRIPE_KEY!",
    "apiKey: import.meta.env.VITE_API_KEY,",
    "api_key = ENV.fetch('STRIPE_KEY')",
    'String secret = System.getenv("APP_SECRET");',
    "api_key_header: X-API-Key",
    "secret_header: X-Hub-Signature",
    # base64 that is not user:password.
    "auth: required",
    "auth: oauth2",
    "Basic auth is base64(user:pass)",
    "auth: " + _base64("just some words"),
]


@pytest.mark.parametrize(("text", "label"), NEW_CATEGORIES)
def test_new_categories_are_found(text: str, label: str) -> None:
    assert find_secret(text) == label


@pytest.mark.parametrize("text", NEW_CATEGORY_LOOK_ALIKES)
def test_new_category_look_alikes_pass(text: str) -> None:
    assert find_secret(text) is None


@pytest.mark.parametrize(("text", "label"), NEW_CATEGORIES)
def test_redaction_of_new_categories(text: str, label: str) -> None:
    redacted = redact(text)
    assert "[withheld]" in redacted
    assert find_secret(redacted) is None
    assert redact(redacted) == redacted


@pytest.mark.parametrize(
    "unit",
    [
        "curl ",
        "curl -u a:",
        "http -a ",
        "--token ",
        "--a-b-c-d-token ",
        "--with-token --token ",
        "api key is ",
        "token a b c d ",
        "<token>",
        "<token>a</token>",
        "admin / ",
        "use a / ",
        "auth: YWJj",
        "basic ",
        "eyJaaaaa.\nlabel ",
        "eyJaaaaa. a b ",
        "1//0",
        "password: ",
        "password=b'",
        "std::",
        "/Ab1",
    ],
)
def test_runtime_of_new_categories_is_linear(unit: str) -> None:
    text = unit * (200_000 // len(unit) + 1)
    assert _slowest(text) < LINEAR_BOUND_S
