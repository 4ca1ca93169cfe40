"""A credential sent in any field of any method never reaches the
disk: not in any file of the data directory, not in the daemon's log. The bytes are
searched after the daemon stopped.

Each string field of every method of the live dispatcher gets a credential of its
own (so a leak names its field), with the rest of the params aimed at real data;
the fields of an import line and of a reference ledger record, a transcript with a
credential in what the person typed, and a transcript whose *path* holds one (it
would go into each trace's locator) are added. Backup directories are left out:
the daemon logs where it wrote a backup, and a path is the person's own choice.
A credential as an agent's *session id*: test_found_bugs.py.
"""

from __future__ import annotations

import json
import shutil
import types
import typing
from pathlib import Path
from typing import Any

import msgspec

from tests.harness.daemon import Running

from .examples import TRANSCRIPT, PersonData, params_of, person_setup, reference_records
from .harness import every_byte
from .inprocess import METHODS

SKIPPED = {"session.restrict", "daemon.backup"}  # see the module docstring


def credential(n: int) -> str:
    """A GitHub-token-shaped credential, unique by ``n``."""
    return f"ghp_{n:06d}A1b2C3d4E5f6G7h8J9k0L1m2N3p4Q5"


def _is_text(annotation: Any) -> tuple[bool, bool]:
    """(holds text, is a list of it) for a field's annotation."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return _is_text(args[0])
    if origin in (typing.Union, types.UnionType):
        return (str in args or any(_is_text(a)[0] for a in args if a is not type(None))), False
    if origin in (tuple, list) and args:
        return args[0] is str, True
    return annotation is str, False


Case = tuple[str, str, dict[str, Any], str]


def field_cases(data: PersonData) -> list[Case]:
    """(label, method, params, credential): one each; the label names where it went."""
    cases = []
    for name, method in sorted(METHODS.items()):
        if name in SKIPPED:
            continue
        base = params_of(name, method, data)
        for field in msgspec.structs.fields(method.params):
            text, listed = _is_text(field.type)
            if not text:
                continue
            secret = credential(len(cases))
            if field.name == "path":
                leaky = data.root / f"{secret}.jsonl"
                shutil.copy(TRANSCRIPT, leaky)
                value: Any = str(leaky)
            elif field.name == "scope":
                value = f"project:/{secret}"  # the shape a scope must have, or it is refused first
            else:
                value = [secret] if listed else f"a note with {secret} in it"
            params = {**base, field.name: value}
            if field.name in ("claim_key", "claim_value"):  # one is refused without the other
                params = {"claim_key": "k", "claim_value": "v", **params}
            cases.append((f"{name} {field.name}", name, params, secret))
    return cases


TRACE_FIELDS = ["content", "claim_key", "claim_value", "scope", "family", "value", "tags"]


def import_cases(data: PersonData, start: int) -> list[Case]:
    cases = []
    for n, key in enumerate([*TRACE_FIELDS, "provenance.source", "provenance.locator"], start):
        secret = credential(n)
        trace: dict[str, Any] = {"content": "an imported note", "claim_value": "v"}
        if key.startswith("provenance."):
            trace["provenance"] = {key.split(".")[1]: f"x {secret}"}
        elif key == "tags":
            trace["tags"] = [secret]
        else:
            trace[key] = f"x {secret}" if key != "scope" else f"project:/{secret}"
        if key == "claim_value":
            trace["claim_key"] = "k"
        cases.append((f"memory.import {key}", "memory.import",
                      {"lines": [{"line": 1, "trace": trace}]}, secret))  # fmt: skip
    secret = credential(start + 20)
    reference = {
        "type": "remember",
        "trace": {"id": "ref-secret-1", "kind": "belief", "content": f"key {secret}",
                  "created_at_ms": 1_700_000_000_000},
    }  # fmt: skip
    cases.append(("memory.import_ledger content", "memory.import_ledger",
                  {"records": reference_records([reference])}, secret))  # fmt: skip
    secret = credential(start + 21)
    purge = {"type": "purge", "id": data.plain, "reason": f"because {secret}"}
    cases.append(("memory.import_ledger purge reason", "memory.import_ledger",
                  {"records": reference_records([purge])}, secret))  # fmt: skip
    return cases


def transcript_case(data: PersonData, n: int) -> Case:
    """A session in which the person pasted a credential."""
    secret = credential(n)
    lines = TRANSCRIPT.read_text().splitlines()
    typed = json.loads(lines[2])
    typed.pop("isMeta", None)
    typed["uuid"] = "ffffffff-0000-4000-8000-000000000099"
    typed["message"]["content"] = f"Use the token {secret} for the deploy bucket."
    leaky = data.root / "pasted.jsonl"
    leaky.write_text("\n".join([*lines, json.dumps(typed)]) + "\n")
    return ("replay.ingest a pasted credential", "replay.ingest", {"path": str(leaky)}, secret)


def test_no_credential_reaches_the_disk(daemon: Running, tmp_path: Path) -> None:
    data = person_setup(daemon, tmp_path)
    cases = field_cases(data)
    cases += import_cases(data, len(cases))
    cases.append(transcript_case(data, len(cases) + 30))
    secrets: dict[str, str] = {}
    refusals = 0
    with daemon.connect() as conn:
        for label, method, params, secret in cases:
            secrets[label] = secret
            reply = conn.request(method, **params)
            error = reply.get("error") or {}
            refused = (reply.get("result") or {}).get("refused") or []
            if (error.get("data") or {}).get("reason") == "secret_detected" or any(
                "credential" in r["reason"] for r in refused
            ):
                refusals += 1
                said = json.dumps([error.get("message"), [r["reason"] for r in refused]])
                assert secret not in said, f"{label}: echoed in the refusal"
    daemon.stop()
    stored = every_byte(daemon.data)
    log = daemon.log.read_bytes()
    leaks = [label for label, s in secrets.items() if s.encode() in stored or s.encode() in log]
    assert not leaks, f"credentials at rest, sent in: {leaks}"
    # The writes were refused by the detector, not lost some other way.
    assert refusals >= 25, f"{refusals} refusals of {len(cases)} cases"
    assert b"Never deploy the payments service" in stored  # the search does see the store
