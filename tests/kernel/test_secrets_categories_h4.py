"""The credential detector on password assignments with symbols, session cookies, chat
webhooks, Oracle JDBC passwords, more vendor keys and password prose in more languages, and
on their look-alikes (placeholders, elided keys, vault lookups)."""

from __future__ import annotations

import pytest

from hikmah.model.secrets import find_secret, redact
from tests.kernel.secrets_cases import LINEAR_BOUND_S, _slowest

# Categories from heldout4's misses and wrongly refused look-alikes. Values are made up
# for the tests.
CATEGORIES_H4 = [
    ("[client]\nuser=backup\npassword=Qx7&Rt^P&*2bL9mW", "password assignment"),
    ("ansible_become_pass: 4Tg&?+Hwp815kN2c", "password assignment"),
    ("db_pass = Zk2&Lm9*Qr4!", "password assignment"),
    ("Cookie: sessionid=q7w2e9r4t6y1u3i8o5p0a2s4d6f8g1h3; csrftoken=x", "session cookie"),
    (
        "Set-Cookie: _store_session=Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z--0a1b2c3d4e5f; path=/",
        "session cookie",
    ),
    ("connect.sid=s%3AQ9wErTy7uIoP2aSdF4gHjK6lZxCv8bNm.kq1W2e3R4t5Y6u7I8o9P0", "session cookie"),
    ("PHPSESSID=h3k9m2p7q1r8s4t6v0w5x2y9z3 for the repro", "session cookie"),
    ("JSESSIONID=8F3A9C21D7E64B0A5C9E2F1D3B7A6C4E", "session cookie"),
    ("session=eyJ1c2VyIjogIjQyIn0.Zx9Q2w.k7Pq3Rs9Tu1Vw5Xy8Za2Bc4De6F", "session cookie"),
    (
        "https://acme.webhook.office.com/webhookb2/0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b@"
        "1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d/IncomingWebhook/9f8e7d6c5b4a39281706f5e4d3c2b1a0/"
        "2b3c4d5e-6f7a-8b9c-0d1e-2f3a4b5c6d7e",
        "Teams webhook",
    ),
    ("HOOK=https://chat.example.io/hooks/3kq8xw1mz7p2ny5r9tb4vc6hdj", "Mattermost webhook"),
    ("jdbc:oracle:thin:app/Wq8zRt2Lm5@//db.example:1521/SVC", "Oracle JDBC password"),
    ("$ cat config/master.key\n7d2f9a0c4e6b81357a9c0e2f4b6d8a1c", "Rails master key"),
    ("prefect cloud login -k pnu_Ab3De6Gh9Jk2Mn5Pq8St1Vw4Yz7Bc0Ef3Hi6", "Prefect API key"),
    ("LAUNCHDARKLY_SDK_KEY=sdk-1a2b3c4d-5e6f-4a8b-9c0d-1e2f3a4b5c6d", "LaunchDarkly key"),
    ("token: y0_Ab3De6Gh9Jk2Mn5Pq8St1Vw4Yz7Bc0Ef3Hi6Kl9No2Qr5Tu8Wx1Za4", "Yandex OAuth token"),
    ("asana: 1/1204567890123456/1209876543210987:0a1b2c3d4e5f60718293a4b5c6d7e8f9", "Asana token"),
    (
        "confluent api-key store ABCD1234EFGH5678 "
        "Zq9Wx8Ev7Rc6Tb5Yn4Um3Ik2Ol1Pz0Aq9Sw8De7Fr6Gt5Hy4Ju3Ki2Lo1Pm0Nb9V",
        "Confluent API secret",
    ),
    ("Het wachtwoord voor de server is Hx7&Kp2_Lq9!, niet delen.", "password in prose"),
    ("Hasło do serwera to Mk4pQ@Zr8wTn", "password in prose"),
    ("Veritabanı şifresi: Rt5&Yu8Io2Pa (kullanıcı: app)", "password in prose"),
    ("Sunucu parolası Lq3@Wz8xKp1m", "password in prose"),
    ("サーバーのパスワードは Xy7!Qp2%Rm9s です。", "password in prose"),
    ("管理者 パスワード: Zq@-8Lm3Pw1T", "password in prose"),
]

CATEGORY_H4_LOOK_ALIKES = [
    "https://example.com/login?password=hunter&user=bob",
    "OPENAI_API_KEY=sk-...Zz9Q",
    "STRIPE_SECRET_KEY=sk_live_...",
    "SLACK_BOT_TOKEN=xoxb-your-bot-token-here",
    "API_KEY=changeme",
    "AUTH_TOKEN=replace-me",
    ': "${API_TOKEN:?API_TOKEN must be set}"',
    'vault.hashicorp.com/agent-inject-secret-config: "kv/data/app"',
    "password: \"{{ lookup('hashi_vault', 'secret=kv/data/db:password') }}\"",
    "mapboxgl.accessToken = 'pk.eyJ1IjoiZXhhbXBsZSIsImEiOiJjbDEyMyJ9.Ab3De6Gh9Jk2Mn5Pq8St'",
    "client.post('/login', data={'user': 'alice', 'password': 'wrong-password'})",
    "SESSION_COOKIE_NAME=sessionid",
    "session=abc",
    "Set-Cookie: session=deleted; expires=Thu, 01 Jan 1970 00:00:00 GMT",
    "https://chat.example.io/hooks/incoming",
    "jdbc:oracle:thin:@//db.example:1521/SVC",
    "Het wachtwoord is te kort.",
    "Hasło to za krótkie",
]


@pytest.mark.parametrize(("text", "label"), CATEGORIES_H4)
def test_categories_h4_are_found(text: str, label: str) -> None:
    assert find_secret(text) == label


@pytest.mark.parametrize("text", CATEGORY_H4_LOOK_ALIKES)
def test_category_h4_look_alikes_pass(text: str) -> None:
    assert find_secret(text) is None


@pytest.mark.parametrize(("text", "label"), CATEGORIES_H4)
def test_redaction_of_categories_h4(text: str, label: str) -> None:
    redacted = redact(text)
    assert "[withheld]" in redacted
    assert find_secret(redacted) is None


@pytest.mark.parametrize(
    "unit",
    [
        "password=a&",
        "password=Ab1&x=",
        "sessionid=",
        "a_b_session=",
        "_session=Ab1",
        "https://a.office.com/webhookb2/",
        "a.a.",
        "/IncomingWebhook/",
        "https://a/hooks/",
        "jdbc:oracle:thin:a/",
        "master.key ",
        "api-key store ",
        "1/1234567890/",
        "sdk-",
        "wachtwoord ",
        "パスワード ",
        "şifresi ",
        "${API_TOKEN:?",
    ],
)
def test_runtime_of_categories_h4_is_linear(unit: str) -> None:
    text = unit * (200_000 // len(unit) + 1)
    assert _slowest(text) < LINEAR_BOUND_S
