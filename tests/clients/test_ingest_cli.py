"""``hikmah ingest`` end to end: real transcripts of both formats into a real daemon,
candidates proposed from the person's words only, promoted like any other proposal."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.harness.daemon import Running
from tests.harness.environment import clean_env

FIXTURES = Path(__file__).parents[1] / "fixtures" / "transcripts"
CLAUDE = FIXTURES / "claude-session.jsonl"
CODEX = FIXTURES / "codex-rollout.jsonl"
# Rules that only the assistant or a tool states in the fixtures.
NOT_THE_PERSONS = ("tabs", "migrations")


def ingest(daemon: Running, *files: Path, code: int = 0) -> list[dict[str, object]]:
    result = daemon.cli("ingest", "--json", *map(str, files))
    assert result.returncode == code, result.stderr
    reports: list[dict[str, object]] = json.loads(result.stdout)["files"]
    return reports


def test_ingest_is_idempotent_by_message_id(daemon: Running) -> None:
    first = ingest(daemon, CLAUDE, CODEX)
    assert [r["format"] for r in first] == ["claude-code", "codex"]
    assert all(r["written"] and r["written"] == r["messages"] for r in first)
    again = ingest(daemon, CLAUDE, CODEX)
    assert [(r["written"], r["already"]) for r in again] == [(0, r["messages"]) for r in first]
    episode = daemon.call("memory.recall", query="table-driven tests", kinds=["episode"])
    (hit,) = episode["results"][:1]
    assert hit["trace"]["provenance"]["locator"].startswith(f"transcript:{CLAUDE}#")
    assert hit["trace"]["scope"] == "project:/home/dana/src/payments"
    assert "transcript" in hit["trace"]["tags"]


def test_candidates_come_from_the_persons_words_with_their_quote(daemon: Running) -> None:
    ingest(daemon, CLAUDE, CODEX)
    proposals = json.loads(daemon.cli("consolidate", "--json").stdout)["proposals"]
    mine = [p for p in proposals if p["origin"] == "transcript"]
    contents = {p["content"] for p in mine}
    assert "Never edit the generated files under api/gen by hand" in contents
    assert "Use uv for everything in this repo, not pip" in contents
    assert not any(word in p["content"].lower() for p in mine for word in NOT_THE_PERSONS)
    for proposal in mine:
        (episode_id,) = proposal["evidence"]
        episode = daemon.call("memory.show", id=episode_id)["trace"]
        assert episode["kind"] == "episode" and episode["provenance"]["source"].startswith("human:")
        assert proposal["quote"] in episode["content"]


def test_eligible_proposals_come_first_whatever_their_origin(daemon: Running) -> None:
    for value in ("15", "16"):  # a claim with a rival: never eligible
        daemon.call("memory.remember", content=f"the db is pg {value}", claim_key="db",
                    claim_value=value, source=f"tool:t{value}")  # fmt: skip
    ingest(daemon, CLAUDE)
    proposals = json.loads(daemon.cli("consolidate", "--json").stdout)["proposals"]
    eligible = [p["eligible"] for p in proposals]
    assert True in eligible and False in eligible
    assert eligible == sorted(eligible, reverse=True), [
        (p["origin"], p["eligible"]) for p in proposals
    ]


def test_a_promoted_candidate_is_not_proposed_again(daemon: Running) -> None:
    ingest(daemon, CLAUDE)
    proposals = json.loads(daemon.cli("consolidate", "--json").stdout)["proposals"]
    rule = next(p for p in proposals if p["content"].startswith("Never edit the generated"))
    promoted = daemon.cli("promote", rule["id"], "--verified", "--json", env=clean_env())
    assert promoted.returncode == 0, promoted.stderr
    trace = json.loads(promoted.stdout)["trace"]
    assert (trace["kind"], trace["scope"]) == ("constraint", "project:/home/dana/src/payments")
    assert trace["provenance"]["evidence"] == rule["evidence"]
    after = json.loads(daemon.cli("consolidate", "--json").stdout)["proposals"]
    assert rule["content"] not in {p["content"] for p in after}


def test_secrets_in_a_transcript_are_refused_not_stored(daemon: Running, tmp_path: Path) -> None:
    leaky = tmp_path / "leaky.jsonl"
    shutil.copy(CLAUDE, leaky)
    line = json.loads(CLAUDE.read_text().splitlines()[2])
    line.pop("isMeta")  # a line the person typed, not the harness
    line["uuid"] = "ffffffff-0000-4000-8000-000000000001"
    line["message"]["content"] = "Use the key AKIAIOSFODNN7EXAMPLE for the deploy bucket."
    with leaky.open("a") as out:
        out.write(json.dumps(line) + "\n")
    # As for an import: 3 when some were refused, the rest written.
    (report,) = ingest(daemon, leaky, code=3)
    assert report["written"] == report["messages"] - 1
    refused = report["refused"]
    assert isinstance(refused, list) and len(refused) == 1
    assert "AKIA" not in json.dumps(report)
    found = daemon.call("memory.recall", query="deploy bucket key", kinds=["episode"])
    assert not any("AKIA" in r["trace"]["content"] for r in found["results"])


def test_unreadable_files_are_reported_and_the_rest_ingested(
    daemon: Running, tmp_path: Path
) -> None:
    garbage = tmp_path / "notes.txt"
    garbage.write_text("just some notes\nnot json at all\n")
    result = daemon.cli("ingest", str(tmp_path / "missing.jsonl"), str(garbage), str(CODEX))
    assert result.returncode == 2
    assert "missing.jsonl" in result.stderr and "line 1" in result.stderr
    assert "[3/3]" in result.stdout and "codex session" in result.stdout
