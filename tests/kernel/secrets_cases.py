"""What the tests of the credential detector share: fake credentials, and the bound that
tells a linear scan from catastrophic backtracking.

Fake credentials are assembled at run time so that no test file holds a literal token a
secret scanner would flag on push.
"""

from __future__ import annotations

import base64
import time

from hikmah.model.secrets import find_secret, redact

ALNUM = "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8s9T0"
HEX = "0123456789abcdef"

JWT = (
    "eyJ" + "hbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    "." + "eyJ" + "zdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ"
    "." + "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
PEM = (
    "-----BEGIN " + "RSA PRIVATE KEY-----\n"
    "MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM2g\n"
    "-----END RSA PRIVATE KEY-----"
)

# (text, label find_secret must report)
CREDENTIALS: list[tuple[str, str]] = [
    # Well-known shapes.
    (PEM, "private key"),
    ("-----BEGIN " + "PRIVATE KEY-----", "private key"),
    ("-----BEGIN " + "OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEA", "private key"),
    ("-----BEGIN " + "EC PRIVATE KEY-----", "private key"),
    ("-----BEGIN " + "PGP PRIVATE KEY BLOCK-----", "private key"),
    ("key id AK" + "IAIOSFODNN7EXAMPLE in the log", "AWS access key"),
    ("AS" + "IA" + "Y3FDSNDKFKSIDJSW", "AWS access key"),
    ("gh" + "p_" + ALNUM[:36], "GitHub token"),
    ("clone with gh" + "o_" + ALNUM[:30], "GitHub token"),
    ("gh" + "u_" + ALNUM[:36], "GitHub token"),
    ("gh" + "s_" + ALNUM[:36], "GitHub token"),
    ("gh" + "r_" + ALNUM[:36], "GitHub token"),
    ("github" + "_pat_" + "11ABCDEFG0" + ALNUM[:30] + "_" + ALNUM[:20], "GitHub token"),
    ("gl" + "pat-" + "xY9zA8bC7dE6fG5hI4jK", "GitLab token"),
    ("sk-" + "ant-api03-" + ALNUM[:32], "Anthropic API key"),
    ("sk-" + ALNUM[:40], "OpenAI API key"),
    ("sk-" + "proj-" + ALNUM[:40] + "_" + ALNUM[:10], "OpenAI API key"),
    ("OPENAI_KEY is sk-" + "abcdefghijklmnopqrstuvwxyzabcdef1", "OpenAI API key"),
    ("sk_" + "live_" + ALNUM[:24], "Stripe key"),
    ("rk_" + "live_" + ALNUM[:16], "Stripe key"),
    ("xo" + "xb-" + "1234567890-0987654321-" + ALNUM[:24], "Slack token"),
    ("xo" + "xp-" + "123456789012", "Slack token"),
    ("xo" + "xa-2-" + ALNUM[:12], "Slack token"),
    ("AI" + "za" + "SyD" + ALNUM[:32], "Google API key"),
    ("apikey_" + HEX * 2 + "_" + HEX * 2, "API key"),
    (JWT, "JSON Web Token"),
    ("token " + JWT + " expired", "JSON Web Token"),
    ("postgres://admin:hunter22@db.internal:5432/app", "password in URL"),
    ("redis://:s3cretpass@cache:6379/0", "password in URL"),
    ("mongodb+srv://app:Zq8x!w2@cluster0.example.net/test", "password in URL"),
    ("git remote https://x-access-token:abc123def@github.com/org/repo", "password in URL"),
    ("jdbc:mysql://root:toor1234@10.0.0.5/db", "password in URL"),
    ("amqp://guest:guest@localhost//", "password in URL"),
    ("Authorization: Bearer " + ALNUM[:32], "authorization header"),
    ("-H 'Authorization: Basic " + "YWRtaW46aHVudGVyMjI=" + "'", "authorization header"),
    ("authorization=token " + HEX * 3, "authorization header"),
    ("curl -H 'bearer " + ALNUM[:28] + "'", "bearer token"),
    ("npm_" + ALNUM[:36], "npm token"),
    ("pypi-" + "AgEIcHlwaS5vcmc" + ALNUM + ALNUM[:20], "PyPI token"),
    ("hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGh", "Hugging Face token"),
    ("SG." + ALNUM[:22] + "." + ALNUM + "abc", "SendGrid key"),
    ("do" + "p_v1_" + HEX * 4, "DigitalOcean token"),
    ("wh" + "sec_" + ALNUM[:32], "Stripe webhook secret"),
    ("GOC" + "SPX-" + ALNUM[:28], "Google OAuth client secret"),
    (
        "https://hooks.slack.com/services/" + "T0123ABCD/B0123ABCD/" + ALNUM[:24],
        "Slack webhook",
    ),
    # Assignments, in the examples of the reference.
    ("password=princess1", "password assignment"),
    ("password: summer-2024", "password assignment"),
    ("password = admin_pass123", "password assignment"),
    ("secret=super-secret1", "secret assignment"),
    ("DB_PASSWORD=ADMIN_PASS1", "password assignment"),
    ("api_key=qwerty_asdf", "API key assignment"),
    ("password: admin_pass", "password assignment"),
    ("passphrase = correct-horse-battery-staple", "password assignment"),
    # Assignments in the many styles real text uses.
    ("PASSWORD=hunter22", "password assignment"),
    ("export DB_PASSWORD='Tr0ub4dor&3'", "password assignment"),
    ('{"password": "hunter22!"}', "password assignment"),
    ('{\\"password\\": \\"hunter22!\\"}', "password assignment"),
    ("config['db_password'] = 'letmein99'", "password assignment"),
    ('$password = "s3cr3t-value";', "password assignment"),
    ("'password' => 'changeme'", "password assignment"),
    ('password := "gopher-2024"', "password assignment"),
    ('if password == "sunshine1":', "password assignment"),
    ("mysql --password=qwerty123 db", "password assignment"),
    ("POSTGRES_PASSWORD: postgres", "password assignment"),
    ("**Password:** hunter22", "password assignment"),
    ("passwd=dragon-fly-9", "password assignment"),
    ("https://example.com/login?user=bob&password=hunter22&next=/", "password assignment"),
    ("client_secret: 'Zx9kQ2mN7vB4'", "secret assignment"),
    ("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "secret assignment"),
    ("SECRET_KEY = 'django-insecure-abc123xyz'", "secret assignment"),
    ("x-api-key: 8c2d0f5e9a7b4c31", "API key assignment"),
    ("apiKey: 'abcd1234efgh'", "API key assignment"),
    ("API Key: f00dfeedcafe", "API key assignment"),
    ("api.token=Qm9vb2Jvb2Jvbw", "API key assignment"),
    ("access_token=ya29.a0AfH6SMC", "access token assignment"),
    ("AccessToken: mF_9.B5f-4.1JqM", "access token assignment"),
    ("auth-token = tok_live_51HxYz", "auth token assignment"),
    ("oauth_token=abcdefgh12345", "auth token assignment"),
    ("refresh_token: 1//0gLx-abcDEF", "refresh token assignment"),
    ("private_key = 'MIIEvQIBADANBg'", "private key assignment"),
    ("password: 'correct horse battery staple'", "password assignment"),
    ("password = xxxxxxxx", "password assignment"),
    ("password: Stored-In-Vault", "password assignment"),
    ("password: mypassword", "password assignment"),
    ("password = passwordpassword", "password assignment"),
    ("password = password1", "password assignment"),
    ("Password: Sunshine", "password assignment"),
    ("Password: Sunshine1 is it", "password assignment"),
    ("password = user_pass", "password assignment"),
    # A chain's first word is letters only, at least two of them (the reference's rule).
    ("client_secret=x_rotated-2026-09", "secret assignment"),
    ("password=p_server_only", "password assignment"),
    ("password=p_assw0rd_set", "password assignment"),
    ("api_key=a1_stored_in_vault", "API key assignment"),
]


# Catastrophic backtracking over 200k characters takes minutes; the detector's linear
# scan takes about a second at its worst inputs here, and up to twice that on a shared,
# busy 2-core machine. The bound tells the two apart without timing the detector.
LINEAR_BOUND_S = 4.0


def _slowest(text: str) -> float:
    """Seconds taken by the slower of find_secret and redact on ``text``."""
    timings = []
    for function in (find_secret, redact):
        start = time.perf_counter()
        function(text)
        timings.append(time.perf_counter() - start)
    return max(timings)


def _base64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


GITHUB = "gh" + "p_" + ALNUM[:36]
