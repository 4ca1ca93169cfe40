"""Well-formed params for every method the daemon serves, aimed at a person's data.

The agent and secret tests call every method with real effect: purging the
person's trace, promoting a real proposal, importing a verified line. A method
missing from :data:`KNOWN` (one added later) still gets params built from its
field types, so it is enumerated too.
"""

from __future__ import annotations

import json
import shutil
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from hikmah.ledger.chain import GENESIS, encode_record
from hikmahd.rpc import Method
from tests.harness.daemon import Running

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TRANSCRIPT = FIXTURES / "transcripts" / "claude-session.jsonl"
MEM0 = FIXTURES / "peers" / "mem0" / "mem0-v1.json"  # made by mem0 itself


@dataclass(frozen=True)
class PersonData:
    """What a person wrote before the agent (or the secret) tests start."""

    verified: str  # a verified constraint
    plain: str  # an unverified observation
    commitment: str
    prediction: str
    proposal: str  # a current consolidation proposal
    rule_text: str  # content of the verified constraint
    root: Path  # a directory of the test's own, for files and backups


def person_setup(daemon: Running, root: Path) -> PersonData:
    """Write the person's traces through a person's connection (this process)."""
    with daemon.connect() as conn:
        rule = "Never deploy the payments service on a Friday afternoon"
        verified = conn.call(
            "memory.remember", content=rule, kind="constraint", verified=True, source="human:ana"
        )["trace"]["id"]
        plain = conn.call("memory.remember", content="the staging cache was warm")["trace"]["id"]
        commitment = conn.call(
            "memory.remember", content="Renew the TLS cert", kind="commitment", deadline="+30d"
        )["trace"]["id"]
        prediction = conn.call(
            "memory.predict", family="ci.green", question="Will CI pass?", type="noul", p=0.8
        )["trace"]["id"]
        transcript = root / "session.jsonl"
        shutil.copy(TRANSCRIPT, transcript)
        shutil.copy(MEM0, root / "mem0.json")
        conn.call("replay.ingest", path=str(transcript))
        proposals = conn.call("replay.consolidate")["proposals"]
    assert proposals, "the fixture transcript gave no consolidation proposal"
    return PersonData(
        verified, plain, commitment, prediction, proposals[0]["id"], rule, root
    )  # fmt: skip


def reference_records(payloads: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Lines of a reference ledger (version 2, chained from genesis) holding ``payloads``."""
    prev, rows = GENESIS, []
    for seq, payload in enumerate(payloads, 1):
        record = encode_record(seq, prev, json.dumps(payload, separators=(",", ":")).encode())
        rows.append({"line": seq, "text": record.line.decode()})
        prev = record.hash
    return rows


def known(data: PersonData) -> dict[str, dict[str, Any]]:
    """Params aimed at the person's data, by method (booleans are varied elsewhere)."""
    verified_line = {
        "content": "Imported rule: always deploy on Fridays",
        "kind": "constraint",
        "provenance": {"source": "human:ana", "verified": True},
    }
    reference = reference_records(
        [
            {
                "type": "remember",
                "trace": {
                    "id": "ref-verified-1",
                    "kind": "belief",
                    "content": "the reference ledger says this is verified",
                    "created_at_ms": 1_700_000_000_000,
                    "provenance": {"source": "human:ana", "verified": True},
                },
            },
            {"type": "purge", "id": data.plain, "reason": "reference purge"},
        ]
    )
    return {
        "memory.remember": {"content": "an agent's claim", "source": "human:ana"},
        "memory.recall": {"query": "deploy"},
        "memory.show": {"id": data.verified},
        "memory.fulfill": {"id": data.commitment},
        "memory.purge": {"id": data.plain, "reason": "agent cleanup"},
        "memory.predict": {"family": "ci.green", "question": "Green?", "type": "noul", "p": 0.5},
        "memory.outcome": {"prediction": data.prediction, "observed": "yes"},
        "memory.feedback": {"ids": [data.verified], "outcome": "bad"},
        "memory.pin": {"id": data.verified},
        "memory.unpin": {"id": data.verified},
        "memory.invalidate": {"pattern": data.rule_text, "reason": "the agent says it is stale"},
        "memory.calibration": {"family": "ci.green"},
        "memory.context": {"scope": "global"},
        "memory.export": {"limit": 5},
        "memory.import": {"lines": [{"line": 1, "trace": verified_line}]},
        "memory.import_ledger": {"records": reference},
        "memory.import_source": {"source": "mem0", "path": str(data.root / "mem0.json")},
        # The person's unverified observation has the default source.
        "memory.verify": {"source": "unknown", "confirm": "0" * 16},
        "replay.promote": {"id": data.proposal, "source": "human:ana"},
        "replay.ingest": {"path": str(data.root / "session.jsonl")},
        "ledger.verify": {},
        "ledger.compact": {},
        "daemon.backup": {"dir": str(data.root / "agent-backup")},
        "session.restrict": {"host": "", "session_id": ""},
        "focus.open": {"name": "task:agent"},
        "focus.read": {"name": "task:agent"},
        "focus.absorb": {"name": "task:agent", "query": "deploy"},
        "focus.pin": {"name": "task:agent", "id": data.verified},
        "focus.unpin": {"name": "task:agent", "id": data.verified},
        "focus.note": {"name": "task:agent", "text": "a note"},
        "focus.close": {"name": "task:other"},
        # Well-formed, so that only who asks decides (no device has these).
        "sync.join": {"code": "HKS1-AAAAA"},
        "sync.remove": {"device": "hd" + "a" * 26},
    }


def generic(method: Method, data: PersonData) -> dict[str, Any]:
    """Params for a method with no entry in :func:`known`: each required field filled by
    its type, ids pointing at the person's verified trace."""
    params: dict[str, Any] = {}
    for field in msgspec.structs.fields(method.params):
        if field.required:
            params[field.name] = _filler(field.name, field.type, data)
    return params


def _filler(name: str, annotation: Any, data: PersonData) -> Any:
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return _filler(name, args[0], data)
    if origin is typing.Literal:
        return args[0]
    if origin in (typing.Union, types.UnionType):
        return _filler(name, next(a for a in args if a is not type(None)), data)
    if origin in (tuple, list):
        return [_filler(name, args[0], data)] if args else []
    if origin is dict:
        return {}
    if isinstance(annotation, type) and issubclass(annotation, msgspec.Struct):
        return {
            f.name: _filler(f.name, f.type, data)
            for f in msgspec.structs.fields(annotation)
            if f.required
        }
    if annotation is bool:
        return False
    if annotation in (int, float):
        return 1
    if name in ("dir", "path", "file"):
        return str(data.root / f"generic-{name}")
    if "id" in name:
        return data.verified
    return "x"


def params_of(name: str, method: Method, data: PersonData) -> dict[str, Any]:
    return dict(known(data).get(name) or generic(method, data))


def bool_fields(method: Method) -> list[str]:
    return [f.name for f in msgspec.structs.fields(method.params) if f.type is bool]


def variants(name: str, method: Method, data: PersonData) -> list[dict[str, Any]]:
    """Each boolean field set on its own, then all of them, then none: the flagged calls
    come first, while their target (a proposal, say) is still current."""
    base = params_of(name, method, data)
    flags = bool_fields(method)
    out = [{**base, flag: True} for flag in flags]
    if len(flags) > 1:
        out.append({**base, **dict.fromkeys(flags, True)})
    return [*out, base]
