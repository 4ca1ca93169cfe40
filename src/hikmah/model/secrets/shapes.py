"""The well-known credential shapes, in the order a refusal names them.

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
"""

from __future__ import annotations

import re

from hikmah.model.secrets.checks import (
    PEM_BEGIN,
    Shape,
    azure_key,
    basic_credential,
    bearer_like,
    client_password,
    discord_token,
    header_credential,
    labelled_jwt,
    mixed_and_digit,
    mixed_case,
    near_cloudflare,
    near_vendor,
    netrc_password,
    oracle_password,
    pem_in_base64,
    pgpass_line,
    random_secret,
    registry_auth,
    sas_signature,
    secret_has_digit,
    session_value,
    shape,
    url_password,
)

# What may stand between the parts of a JWT pasted with labels: spaces, a line
# break, and a label of a word or two closed by a colon or spaces.
_JWT_GAP = (
    r"[ \t]{0,8}+(?:\r?\n[ \t]{0,8}+)?+"
    r"(?:[A-Za-z][A-Za-z0-9_-]{0,19}+(?:[ \t][A-Za-z0-9_-]{1,20}+)?"
    r"(?:[ \t]{0,3}+[:=][ \t]{0,8}+|[ \t]{1,8}+))?"
)

# Order matters only for the label: the more specific shape goes first
# (sk-ant- before the generic OpenAI sk-).
PEM = Shape("private key", PEM_BEGIN, needles=("PRIVATE KEY",))
SHAPES: tuple[Shape, ...] = (
    PEM,
    # base64 of "-----BEGIN", as in a Kubernetes secret's tls.key.
    shape(
        "private key",
        r"(?<![A-Za-z0-9+/])LS0tLS1CRUdJTi[A-Za-z0-9+/]{16,}+={0,2}",
        pem_in_base64,
        needles=("LS0tLS1CRUdJTi",),
    ),
    # A PuTTY key file's private part: the lines after "Private-Lines: N".
    shape(
        "private key",
        r"Private-Lines:[ \t]*+[0-9]{1,4}+[ \t]*+\r?\n[ \t]{0,8}+"
        r"(?P<secret>[A-Za-z0-9+/=]{16,256}+"
        r"(?:\r?\n[ \t]{0,8}+[A-Za-z0-9+/=]{1,256}+(?![^\r\n])){0,256}+)",
        needles=("Private-Lines:",),
    ),
    shape(
        "AWS access key",
        r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])",
        needles=("AKIA", "ASIA"),
    ),
    shape(
        "GitHub token",
        r"(?<![A-Za-z0-9_])gh[pousr]_[A-Za-z0-9]{30,}+",
        needles=("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    ),
    shape(
        "GitHub token",
        r"(?<![A-Za-z0-9_])github_pat_[A-Za-z0-9_]{40,}+",
        needles=("github_pat_",),
    ),
    shape(
        "GitLab token",
        r"(?<![A-Za-z0-9_-])gl(?:pat|rt|dt|ptt|ft|cbt|soat|agent|oas)-(?P<secret>[A-Za-z0-9_-]{20,}+)",
        random_secret,
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
    shape(
        "Anthropic API key",
        r"(?<![A-Za-z0-9_-])sk-ant-[A-Za-z0-9_-]{20,}+",
        needles=("sk-ant-",),
    ),
    shape(
        "OpenAI API key",
        r"(?<![A-Za-z0-9_-])sk-(?:proj-)?(?P<secret>[A-Za-z0-9_-]{32,}+)",
        secret_has_digit,
        needles=("sk-",),
    ),
    shape(
        "Stripe key",
        r"(?<![A-Za-z0-9_])[sr]k_live_[A-Za-z0-9]{16,}+",
        needles=("k_live_",),
    ),
    shape(
        "Stripe webhook secret",
        r"(?<![A-Za-z0-9_])whsec_[A-Za-z0-9]{24,}+",
        needles=("whsec_",),
    ),
    # A Slack token holds its workspace's and bot's numeric ids, so a placeholder spelled
    # in words (xoxb-your-bot-token-here) has no digit and passes.
    shape(
        "Slack token",
        r"(?<![A-Za-z0-9_-])xox[abprs]-(?P<secret>[A-Za-z0-9-]{10,}+)",
        secret_has_digit,
        needles=("xox",),
    ),
    shape(
        "Slack webhook",
        r"https://hooks\.slack\.com/services/[A-Za-z0-9]{1,64}+/[A-Za-z0-9]{1,64}+"
        r"/[A-Za-z0-9]{16,}+",
        needles=("hooks.slack.com",),
    ),
    shape(
        "Google API key",
        r"(?<![A-Za-z0-9_-])AIza[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])",
        needles=("AIza",),
    ),
    shape(
        "Google OAuth client secret",
        r"(?<![A-Za-z0-9_-])GOCSPX-[A-Za-z0-9_-]{28,}+",
        needles=("GOCSPX-",),
    ),
    shape(
        "API key",
        r"(?<![A-Za-z0-9])apikey_[0-9a-fA-F]{32,}+_[0-9a-fA-F]{32,}+",
        needles=("apikey_",),
    ),
    shape("npm token", r"(?<![A-Za-z0-9_])npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])", needles=("npm_",)),
    shape(
        "PyPI token",
        r"(?<![A-Za-z0-9_-])pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{40,}+",
        needles=("pypi-",),
    ),
    # Real Hugging Face tokens mix cases; a long snake_case identifier does not.
    shape(
        "Hugging Face token",
        r"(?<![A-Za-z0-9_])hf_(?P<secret>[A-Za-z0-9]{34,}+)",
        mixed_case,
        needles=("hf_",),
    ),
    shape(
        "SendGrid key",
        r"(?<![A-Za-z0-9_.-])SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}",
        needles=("SG.",),
    ),
    shape(
        "DigitalOcean token",
        r"(?<![A-Za-z0-9_])do[por]_v1_[a-f0-9]{64}",
        needles=("_v1_",),
    ),
    shape(
        "Vault token",
        r"(?<![A-Za-z0-9_.-])hv[sb]\.[A-Za-z0-9_-]{24,}+",
        needles=("hvs.", "hvb."),
    ),
    # Vendor tokens with a distinctive prefix; each body has a fixed length or a
    # minimum one, and a digit or mixed case, so a word after the prefix is prose.
    shape(
        "Shopify token",
        r"(?<![A-Za-z0-9_])shp(?:at|ca|pa|ss)_(?P<secret>[a-fA-F0-9]{32})(?![A-Za-z0-9])",
        needles=("shpat_", "shpca_", "shppa_", "shpss_"),
    ),
    shape(
        "Postman API key",
        r"(?<![A-Za-z0-9_-])PMAK-[A-Za-z0-9]{24}-(?P<secret>[A-Za-z0-9]{30,40}+)",
        random_secret,
        needles=("PMAK-",),
    ),
    shape(
        "Databricks token",
        r"(?<![A-Za-z0-9_-])dapi(?P<secret>[a-f0-9]{32})(?:-[0-9])?(?![A-Za-z0-9])",
        random_secret,
        needles=("dapi",),
    ),
    shape(
        "Square token",
        r"(?<![A-Za-z0-9_-])sq0(?:atp|csp|idp)-(?P<secret>[A-Za-z0-9_-]{22,}+)",
        random_secret,
        needles=("sq0atp-", "sq0csp-", "sq0idp-"),
    ),
    shape(
        "Brevo key",
        r"(?<![A-Za-z0-9_-])x(?:keysib|smtpsib)-[a-f0-9]{64}-(?P<secret>[A-Za-z0-9]{16})",
        needles=("xkeysib-", "xsmtpsib-"),
    ),
    shape(
        "Groq API key",
        r"(?<![A-Za-z0-9_])gsk_(?P<secret>[A-Za-z0-9]{40,}+)",
        random_secret,
        needles=("gsk_",),
    ),
    shape(
        "Atlassian API token",
        r"(?<![A-Za-z0-9_-])ATATT3(?P<secret>[A-Za-z0-9_=-]{60,}+)",
        random_secret,
        needles=("ATATT3",),
    ),
    shape(
        "Okta API token",
        r"(?<![A-Za-z0-9_-])SSWS[ \t]{1,5}+(?P<secret>[A-Za-z0-9_-]{30,}+)",
        mixed_and_digit,
        needles=("SSWS",),
    ),
    shape(
        "age secret key",
        r"(?<![A-Za-z0-9_-])AGE-SECRET-KEY-1(?P<secret>[A-Z0-9]{50,}+)",
        needles=("AGE-SECRET-KEY-1",),
    ),
    shape(
        "Tailscale key",
        r"(?<![A-Za-z0-9_-])tskey-(?:auth|api|client|scim|webhook)-[A-Za-z0-9]{6,}+-"
        r"(?P<secret>[A-Za-z0-9]{20,}+)",
        random_secret,
        needles=("tskey-",),
    ),
    shape(
        "Docker token",
        r"(?<![A-Za-z0-9_-])dckr_(?:pat|oat)_(?P<secret>[A-Za-z0-9_-]{24,}+)",
        random_secret,
        needles=("dckr_",),
    ),
    shape(
        "Azure SAS signature",
        r"(?<![A-Za-z0-9_])sig=(?P<secret>[A-Za-z0-9%+/=_-]{30,256}+)",
        sas_signature,
        needles=("sig=",),
    ),
    shape(
        "Discord webhook",
        r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/[0-9]{17,20}+"
        r"/(?P<secret>[A-Za-z0-9_-]{40,}+)",
        needles=("/api/webhooks/",),
    ),
    shape(
        "Telegram bot token",
        r"(?:(?<![A-Za-z0-9_:-])|(?<=/bot))[0-9]{8,10}+:(?P<secret>[A-Za-z0-9_-]{35})"
        r"(?![A-Za-z0-9_-])",
        mixed_and_digit,
        needles=(":",),
    ),
    shape(
        "Mailgun key",
        r"(?<![A-Za-z0-9_-])key-(?P<secret>[0-9a-z]{32})(?![A-Za-z0-9])",
        secret_has_digit,
        needles=("key-",),
    ),
    shape(
        "Mailchimp key",
        r"(?<![A-Za-z0-9_-])(?P<secret>[0-9a-f]{32})-us[0-9]{1,2}(?![A-Za-z0-9])",
        random_secret,
        needles=("-us",),
    ),
    shape(
        "New Relic key",
        r"(?<![A-Za-z0-9_-])NR(?:AK|AA|II|IQ|JS|RA|SP)-(?P<secret>[A-Z0-9]{27})(?![A-Za-z0-9])",
        random_secret,
        needles=("NRAK-", "NRAA-", "NRII-", "NRIQ-", "NRJS-", "NRRA-", "NRSP-"),
    ),
    shape(
        "Sentry DSN",
        r"https?://(?P<secret>[0-9a-f]{32})(?::[0-9a-f]{32})?@[A-Za-z0-9.-]{1,200}+"
        r"(?::[0-9]{1,5}+)?/[0-9]{1,20}+(?![A-Za-z0-9])",
        needles=("://",),
    ),
    shape(
        "Doppler token",
        r"(?<![A-Za-z0-9_.-])dp\.(?:st|ct|pt|sa|scim|audit)\.(?:[a-z0-9_-]{1,40}+\.)?"
        r"(?P<secret>[A-Za-z0-9]{40,}+)",
        random_secret,
        needles=("dp.",),
    ),
    shape(
        "Airtable token",
        r"(?<![A-Za-z0-9_])pat[A-Za-z0-9]{14}\.(?P<secret>[a-f0-9]{64})",
        needles=("pat",),
    ),
    shape(
        "Firebase server key",
        r"(?<![A-Za-z0-9_-])AAAA[A-Za-z0-9_-]{7}:(?P<secret>APA91b[A-Za-z0-9_-]{100,}+)",
        needles=(":APA91b",),
    ),
    shape(
        "Heroku API key",
        r"(?<![A-Za-z0-9-])(?P<secret>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})"
        r"(?![A-Za-z0-9-])",
        near_vendor("heroku"),
        re.IGNORECASE,
        needles=("heroku",),
    ),
    shape(
        "Cloudflare token",
        r"(?<![A-Za-z0-9_-])(?P<secret>[A-Za-z0-9_-]{37,40})(?![A-Za-z0-9_-])",
        lambda match: mixed_and_digit(match) and near_cloudflare(match),
        needles=("cloudflare", "cf_", "cf-"),
    ),
    # A Go DSN has no scheme: user:password@tcp(host:port)/db.
    shape(
        "password in DSN",
        r"(?<![A-Za-z0-9_.:/@-])[A-Za-z0-9_.-]{1,64}+:(?P<secret>[^\s@/\"'`]{1,256}+)"
        r"@(?:tcp|udp|unix)\(",
        url_password,
        needles=("@tcp(", "@udp(", "@unix("),
    ),
    # Connection strings of Azure Storage and Service Bus / Event Hubs.
    shape(
        "Azure key",
        r"(?<![A-Za-z0-9])(?:Account|SharedAccess)Key[ \t]{0,3}+=[ \t]{0,3}+"
        r"(?P<secret>[A-Za-z0-9+/]{30,}+=*+)",
        azure_key,
        re.IGNORECASE | re.ASCII,
        needles=("accountkey", "sharedaccesskey"),
    ),
    # "auths" in ~/.docker/config.json: base64 of user:password.
    shape(
        "registry credential",
        r"\\?\"auth\\?\"[ \t]{0,5}+:[ \t\r\n]{0,20}+"
        r"\\?\"(?P<secret>[A-Za-z0-9+/]{8,1024}+={0,2})\\?\"",
        registry_auth,
        needles=('"auth',),
    ),
    # An HTTP client's user:password: curl -u, --user; httpie -a, --auth; wget --user.
    shape(
        "password on a command line",
        r"(?<![A-Za-z0-9_-])(?:-u|-a|--user|--auth|--proxy-user|--http-user|-U)"
        r"(?:[ \t]{1,3}+|=)?+[\"']?+[^\s:\"'$]{1,64}+:(?P<secret>[^\s\"']{1,256}+)",
        client_password,
        needles=("curl", "wget", "http", "xh"),
    ),
    # Google OAuth refresh tokens ("1//0...") and access tokens ("ya29.").
    shape(
        "Google OAuth token",
        r"(?<![A-Za-z0-9_/-])1//0[A-Za-z0-9_-]{30,}+",
        needles=("1//0",),
    ),
    shape(
        "Google OAuth token",
        r"(?<![A-Za-z0-9_.-])ya29\.(?P<secret>[A-Za-z0-9_-]{30,}+)",
        mixed_case,
        needles=("ya29.",),
    ),
    shape(
        "Discord bot token",
        r"(?<![A-Za-z0-9_-])(?P<id>[MNO][A-Za-z0-9_-]{22,27})\.[A-Za-z0-9_-]{6}\."
        r"[A-Za-z0-9_-]{27,40}(?![A-Za-z0-9_-])",
        discord_token,
    ),
    # An account SID alone names the account; next to a 32-hex auth token
    # (either way round, within a few lines) the pair signs in.
    shape(
        "Twilio credentials",
        r"(?<![A-Za-z0-9])AC[0-9a-f]{32}(?![A-Za-z0-9])(?s:.){0,300}?"
        r"(?<![A-Za-z0-9])(?P<secret>[0-9a-f]{32})(?![A-Za-z0-9])",
        needles=("AC",),
    ),
    shape(
        "Twilio credentials",
        r"(?<![A-Za-z0-9])(?P<secret>[0-9a-f]{32})(?![A-Za-z0-9])(?s:.){0,300}?"
        r"(?<![A-Za-z0-9])AC[0-9a-f]{32}(?![A-Za-z0-9])",
        needles=("AC",),
    ),
    shape(
        "JSON Web Token",
        r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{5,}+\.eyJ[A-Za-z0-9_-]{5,}+\.[A-Za-z0-9_-]*+",
        needles=("eyJ",),
    ),
    # A JWT pasted in parts with a label before each ("header eyJ...", "payload:
    # eyJ...", "sig ..."); a label is a word or two, then spaces or a colon.
    shape(
        "JSON Web Token",
        r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{5,}+\.?+" + _JWT_GAP + r"\.?+"
        r"eyJ[A-Za-z0-9_-]{5,}+\.?+" + _JWT_GAP + r"\.?+(?P<sig>[A-Za-z0-9_-]{16,}+)",
        labelled_jwt,
        needles=("eyJ",),
    ),
    # The user part stops at ':' and the password at '@', so both can be
    # possessive; an empty password (redis://:@host) is no password.
    shape(
        "password in URL",
        r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,30}+://[^\s/?#@:]{0,256}+"
        # A password may hold "#" (mysql://root:#Zq8x@db), never "/", "?" or "@".
        r":(?P<secret>[^\s/?@]{1,256}+)@(?=[A-Za-z0-9\[])",
        url_password,
        needles=("://",),
    ),
    # ~/.netrc: "machine HOST login USER password PASS", on one line or several.
    shape(
        "netrc password",
        # "default" alone is too common a word: only "default login USER" counts.
        r"(?<![A-Za-z0-9_-])(?:machine[ \t]++[^\s]{1,256}+"
        r"(?:\s{1,20}+(?:login|account)[ \t]++[^\s]{1,256}+)?"
        r"|default\s{1,20}+login[ \t]++[^\s]{1,256}+)"
        r"\s{1,20}+password[ \t]++(?P<secret>[^\s]{1,256}+)",
        netrc_password,
        needles=("machine", "default"),
    ),
    # ~/.pgpass: a whole line of host:port:database:user:password.
    shape(
        "pgpass password",
        r"^[ \t]{0,8}+(?P<host>[A-Za-z0-9._*-]{1,253}+):(?:[0-9]{2,5}+|\*)"
        r":[^:\s]{1,128}+:[^:\s]{1,128}+:(?P<secret>[^\s]{1,256}+)[ \t]{0,8}+$",
        pgpass_line,
        re.MULTILINE,
    ),
    shape(
        "authorization header",
        r"authorization[\"']?[ \t]{0,5}+[:=][ \t]{0,5}+[\"']?(?:basic|bearer|token)[ \t]{1,5}+"
        r"(?P<secret>[A-Za-z0-9._~+/-]{8,1024}+=*+)",
        header_credential,
        re.IGNORECASE | re.ASCII,
        needles=("authorization",),
    ),
    shape(
        "bearer token",
        r"(?<![A-Za-z0-9_-])bearer[ \t]{1,5}+(?P<secret>[A-Za-z0-9._~+/-]{20,1024}+=*+)",
        bearer_like,
        re.IGNORECASE | re.ASCII,
        needles=("bearer",),
    ),
    # The same base64 of user:password bare ("auth: YWRt...") or after "Basic"
    # without an Authorization header.
    shape(
        "basic auth credential",
        r"(?<![A-Za-z0-9-])(?:auth|basic)[\"']?+(?:[ \t]{0,5}+[:=][ \t]{0,5}+|[ \t]{1,5}+)[\"']?+"
        r"(?P<secret>[A-Za-z0-9+/]{8,1024}+={0,2}+)(?![A-Za-z0-9+/=_-])",
        basic_credential,
        re.IGNORECASE | re.ASCII,
        needles=("auth", "basic"),
    ),
    shape(
        "Prefect API key",
        r"(?<![A-Za-z0-9_])pnu_(?P<secret>[A-Za-z0-9]{36})(?![A-Za-z0-9])",
        random_secret,
        needles=("pnu_",),
    ),
    shape(
        "Yandex OAuth token",
        r"(?<![A-Za-z0-9_])y0_(?P<secret>[A-Za-z0-9_-]{40,}+)",
        mixed_and_digit,
        needles=("y0_",),
    ),
    # An Asana personal access token: 1/<user id>/<token id>:<32 hex>.
    shape(
        "Asana token",
        r"(?<![A-Za-z0-9/])[0-9]/[0-9]{10,20}+/[0-9]{10,20}+:(?P<secret>[0-9a-f]{32})"
        r"(?![A-Za-z0-9])",
        secret_has_digit,
        needles=("/",),
    ),
    # A LaunchDarkly SDK, API or mobile key: a prefix and a UUID, with its name near.
    shape(
        "LaunchDarkly key",
        r"(?<![A-Za-z0-9_-])(?:sdk|api|mob)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}"
        r"-[0-9a-f]{12}(?![A-Za-z0-9])",
        near_vendor("launchdarkly", "ld_"),
        needles=("sdk-", "api-", "mob-"),
    ),
    shape(
        "Confluent API secret",
        r"api-key[ \t]++store[ \t]++[A-Z0-9]{16}[ \t]++(?P<secret>[A-Za-z0-9+/]{64})"
        r"(?![A-Za-z0-9+/])",
        random_secret,
        needles=("api-key",),
    ),
    # Microsoft Teams incoming webhooks (webhook.office.com, formerly outlook.office.com).
    shape(
        "Teams webhook",
        r"https://(?:[A-Za-z0-9-]{1,63}+\.){0,5}office(?:365)?+\.com/webhook(?:b2)?+/[^\s/]{1,120}+"
        r"/IncomingWebhook/(?P<secret>[0-9a-f]{32}(?:/[0-9a-f-]{36}(?:/[A-Za-z0-9_-]{20,})?+)?+)",
        needles=("/IncomingWebhook/",),
    ),
    # A Mattermost incoming webhook: /hooks/ and a 26-character id, which is the secret.
    shape(
        "Mattermost webhook",
        r"https?://[A-Za-z0-9.:-]{1,253}+/hooks/(?P<secret>[a-z0-9]{26})(?![A-Za-z0-9_-])",
        secret_has_digit,
        needles=("/hooks/",),
    ),
    # Oracle's thin driver with the password inline: jdbc:oracle:thin:scott/tiger@//host.
    shape(
        "Oracle JDBC password",
        r"jdbc:oracle:[a-z]{1,10}+:[A-Za-z0-9_$#.]{1,64}+/(?P<secret>[^\s/@\"']{1,128}+)@",
        oracle_password,
        re.IGNORECASE | re.ASCII,
        needles=("jdbc:oracle",),
    ),
    # A Rails master key: 32 hex digits after "master.key" (cat config/master.key).
    shape(
        "Rails master key",
        r"master[._]key[\"']?+[^\r\n0-9a-f]{0,60}+(?:\r?\n[ \t]{0,8}+)?+"
        r"(?P<secret>[0-9a-f]{32})(?![A-Za-z0-9])",
        secret_has_digit,
        needles=("master.key", "master_key"),
    ),
    # A session cookie's value: the cookie a server trusts as the login.
    shape(
        "session cookie",
        r"(?<![A-Za-z0-9_.-])(?:sessionid|session|session_id|connect\.sid|phpsessid|jsessionid"
        r"|_?+(?:[A-Za-z0-9]{1,30}+_){1,3}+session)=(?P<secret>[A-Za-z0-9%._~+/:=-]{20,4096}+)",
        session_value,
        re.IGNORECASE | re.ASCII,
        needles=("session", "sessid", "connect.sid"),
    ),
)
