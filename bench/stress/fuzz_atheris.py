"""Coverage-guided fuzzing (atheris, libFuzzer) of the frame reader and the credential
detector. Not a test dependency: install it into the venv to run this.

    .venv/bin/pip install atheris
    .venv/bin/python bench/stress/fuzz_atheris.py --target frames  -max_total_time=300
    .venv/bin/python bench/stress/fuzz_atheris.py --target secrets -max_total_time=300 \\
        -max_len=4096 bench/stress/corpus-secrets
    .venv/bin/python bench/stress/fuzz_atheris.py --target secrets -runs=200000

Everything after ``--target`` goes to libFuzzer (``-runs``, ``-max_total_time``,
``-max_len``, a corpus directory to read and grow, ``-help=1``). For the detector,
a seed corpus of credential shapes and a dictionary of their prefixes are added
unless you give a corpus or ``-dict=``: its branches sit behind regular
expressions, which give the fuzzer no coverage to climb. That corpus is kept in
``$TMPDIR/hikmah-atheris-<uid>/`` and grows run after run. A failure writes the
input as ``crash-<sha1>`` in the current directory; run the script with
``--target`` and that file as its only other argument to replay it.

Properties checked on every input:

- frames: fed in chunks cut where the input says, with a limit it chooses, the
  :class:`~hikmahd.framing.FrameReader` yields exactly what a reference splitter
  does (complete non-blank lines; one ``Oversized`` per line over the limit,
  including a partial line still arriving) and never holds more than the limit
  of an incomplete frame;
- secrets: :func:`~hikmah.model.secrets.find_secret`, :func:`~hikmah.model.secrets.redact` and
  :func:`~hikmah.model.secrets.check_fields` never raise anything but
  ``SecretDetected``; a redacted text holds no credential the detector finds;
  redacting twice changes nothing; and the detector stays linear (an input takes
  at most 20 ms per KiB plus 50 ms, the best of three tries, far above its normal
  cost, far below what a backtracking blow-up takes).
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import tempfile
import time
from pathlib import Path

import atheris

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

with atheris.instrument_imports():
    from hikmah.model import secrets
    from hikmah.model.errors import SecretDetected
    from hikmahd.framing import FrameReader, Oversized


def reference(stream: bytes, limit: int) -> list[bytes | str]:
    *lines, rest = stream.split(b"\n")
    out: list[bytes | str] = [
        "big" if len(line) > limit else line for line in lines if len(line) > limit or line.strip()
    ]
    if len(rest) > limit:
        out.append("big")
    return out


def frames(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    limit = fdp.ConsumeIntInRange(1, 64)
    cuts = sorted(fdp.ConsumeIntInRange(0, 512) for _ in range(fdp.ConsumeIntInRange(0, 8)))
    stream = fdp.ConsumeBytes(fdp.remaining_bytes())
    reader = FrameReader(limit)
    got: list[bytes | str] = []
    edges = [0, *(c for c in cuts if c < len(stream)), len(stream)]
    for start, end in itertools.pairwise(edges):
        for frame in reader.feed(stream[start:end]):
            if isinstance(frame, Oversized):
                assert frame.size > limit
                got.append("big")
            else:
                got.append(frame)
        assert reader.pending <= limit, (reader.pending, limit)
    expected = reference(stream, limit)
    assert got == expected, (got, expected)


def detector(data: bytes) -> None:
    text = data.decode("utf-8", "replace")  # so the seeds and the dictionary read as text
    found = secrets.find_secret(text)
    redacted = secrets.redact(text)
    try:
        secrets.check_fields([("content", text), ("tags[0]", text[:64])])
    except SecretDetected as exc:
        assert found is not None or secrets.find_secret(text[:64]) is not None, exc
        assert text not in str(exc) or len(text) < 8, "the refusal echoes the value"
    bound = 0.05 + 0.02 * len(text) / 1024
    if _cost(text) > bound:  # measured again, the best of three: a pause is not a blow-up
        spent = min(_cost(text) for _ in range(3))
        assert spent < bound, f"{spent * 1000:.0f} ms for {len(text)} chars"
    assert secrets.find_secret(redacted) is None, (text, redacted)
    assert secrets.redact(redacted) == redacted


def _cost(text: str) -> float:
    started = time.perf_counter()
    secrets.find_secret(text)
    secrets.redact(text)
    return time.perf_counter() - started


TARGETS = {"frames": frames, "secrets": detector}

# The detector's branches sit behind its regular expressions (C code, which gives
# no coverage): without these, random bytes rarely reach them.
SEEDS = [
    "deploy key ghp_000001A1b2C3d4E5f6G7h8J9k0L1m2N3p4Q5 for the bucket",
    "AKIAIOSFODNN7EXAMPLE and the secret wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "export DB_PASSWORD=Hunter2-is-not-it",
    'password: "c0rrect horse battery staple"',
    "curl -H 'Authorization: Bearer abc123def456ghi789' https://api",
    "postgres://ana:S3cretPass@db.internal:5432/app",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
    "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD",
    "xoxb-123456789012-abcdefABCDEF",
    "api_key = $API_KEY (a reference, not a value)",
    "the token lives in vault:secret/ci/token",
]
DICTIONARY = [
    "ghp_", "gho_", "github_pat_", "AKIA", "sk-", "xoxb-", "Bearer ", "Authorization:",
    "password", "passwd", "secret", "token", "api_key", "=", ": ", '"', "://", "@",
    "-----BEGIN ", "PRIVATE KEY-----", "-----END ", "$", "vault:", "\n",
]  # fmt: skip


def _escaped(word: str) -> str:
    """A dictionary entry in libFuzzer's syntax (anything unusual as \\xNN)."""
    plain = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 -_:=@$/.")
    return "".join(c if c in plain else f"\\x{ord(c):02x}" for c in word)


def with_seeds(rest: list[str]) -> list[str]:
    """Add a seed corpus and a dictionary for the detector, unless the caller gave them."""
    # One place per user, reused: libFuzzer adds what it finds to the corpus, so a
    # later run resumes from there (libFuzzer exits without running atexit hooks).
    work = Path(tempfile.gettempdir()) / f"hikmah-atheris-{os.getuid()}"
    work.mkdir(mode=0o700, exist_ok=True)
    extra = []
    if not any(arg.startswith("-dict=") for arg in rest):
        words = work / "dictionary"
        words.write_text("".join(f'"{_escaped(w)}"\n' for w in DICTIONARY))
        extra.append(f"-dict={words}")
    if not any(not arg.startswith("-") for arg in rest):
        corpus = work / "corpus"
        corpus.mkdir(exist_ok=True)
        for n, seed in enumerate(SEEDS):
            (corpus / f"seed{n}").write_text(seed)
        extra.append(str(corpus))
    return [*extra, *rest]


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], epilog="other arguments go to libFuzzer"
    )
    p.add_argument("--target", choices=sorted(TARGETS), default="frames")
    args, rest = p.parse_known_args()
    if args.target == "secrets":
        rest = with_seeds(rest)
    atheris.Setup([sys.argv[0], *rest], TARGETS[args.target])
    atheris.Fuzz()


if __name__ == "__main__":
    main()
