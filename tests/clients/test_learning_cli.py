"""Replay and learning from the shell, against a real daemon: consolidate and promote,
calibration, feedback, pins and invalidation."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from hikmah.model.paths import person_source
from tests.harness.daemon import Running
from tests.harness.environment import clean_env


def ok(result: subprocess.CompletedProcess[str]) -> str:
    """The stdout of a command that must have succeeded."""
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_consolidate_promote_and_refuse_a_stale_proposal(daemon: Running) -> None:
    for source in ("human:ana", "agent:codex"):
        daemon.call(
            "memory.remember", content="prod db is postgres", claim_key="prod.db",
            claim_value="postgres", source=source, confidence=0.9,
        )  # fmt: skip
    shown = json.loads(daemon.cli("consolidate", "--json").stdout)["proposals"]
    (proposal,) = shown
    assert proposal["eligible"] and proposal["support"] == 2
    assert "ELIGIBLE " + proposal["id"] in daemon.cli("consolidate").stdout

    daemon.call(
        "memory.remember", content="prod db is still postgres", claim_key="prod.db",
        claim_value="postgres", source="human:bo",
    )  # fmt: skip
    stale = daemon.cli("promote", proposal["id"], "--verified")
    assert stale.returncode == 3 and "evidence changed" in stale.stderr
    missing = daemon.cli("promote", "pr_nonexistent")
    assert missing.returncode == 4 and "no proposal has id pr_nonexistent" in missing.stderr

    (fresh,) = json.loads(daemon.cli("consolidate", "--json").stdout)["proposals"]
    promoted = json.loads(
        ok(daemon.cli("promote", fresh["id"], "--verified", "--json", env=clean_env()))
    )["trace"]
    assert promoted["kind"] == "belief" and promoted["provenance"]["verified"]
    assert promoted["provenance"]["source"] == person_source()
    assert sorted(promoted["provenance"]["evidence"]) == sorted(fresh["evidence"])
    assert json.loads(daemon.cli("consolidate", "--json").stdout)["proposals"] == []


def test_calibration_reports_a_family_and_when_it_is_measurable(daemon: Running) -> None:
    for observed in ("yes", "no", "yes"):
        forecast = daemon.call(
            "memory.predict", family="ci.green", question="CI green?", type="noul", p=0.8
        )["trace"]
        daemon.call("memory.outcome", prediction=forecast["id"], observed=observed)
    report = json.loads(daemon.cli("calibration", "--json").stdout)["families"]
    (family,) = report
    assert (family["family"], family["n"], family["measurable"]) == ("ci.green", 3, False)
    # (0.04 + 0.64 + 0.04) / 3
    assert abs(family["brier"] - 0.24) < 1e-9
    text = daemon.cli("calibration", "--family-prefix", "ci.").stdout
    assert "ci.*" in text and "not yet measurable" in text


def test_feedback_and_pins_show_in_why(daemon: Running) -> None:
    trace = daemon.call("memory.remember", content="bump the cache ttl to fix stale pages")["trace"]
    assert "good outcome" in ok(daemon.cli("feedback", "good", trace["id"]))
    assert ok(daemon.cli("pin", trace["id"])).startswith("pinned")
    (result,) = json.loads(daemon.cli("recall", "--json", "cache ttl").stdout)["results"]
    assert result["why"]["feedback"] > 0 and result["why"]["pinned"]
    assert ok(daemon.cli("unpin", trace["id"])).startswith("unpinned")
    missing = daemon.cli("feedback", "bad", "tr_doesnotexist")
    assert missing.returncode == 4


def test_invalidate_shows_the_list_then_supersedes_each(daemon: Running) -> None:
    old = [
        daemon.call("memory.remember", content=f"deploy with fabric to host {n}", tags=["ops"])[
            "trace"
        ]
        for n in range(3)
    ]
    daemon.call("memory.remember", content="fabric of the office chairs is blue")
    dry = json.loads(
        daemon.cli(
            "invalidate", "deploy with FABRIC", "--reason", "moved to k8s", "--dry-run", "--json"
        ).stdout
    )
    assert sorted(t["id"] for t in dry["matched"]) == sorted(t["id"] for t in old)
    assert dry["written"] == []

    unconfirmed = daemon.cli("invalidate", "deploy with fabric", "--reason", "moved to k8s")
    assert unconfirmed.returncode == 2 and "--yes" in unconfirmed.stderr
    assert "3 trace(s) match" in unconfirmed.stderr  # the list came first

    done = json.loads(
        ok(
            daemon.cli(
                "invalidate",
                "deploy with fabric",
                "--tag",
                "ops",
                "--reason",
                "moved to k8s",
                "--yes",
                "--json",
            )
        )
    )
    assert len(done["written"]) == 3
    for entry in done["written"]:
        shown = daemon.call("memory.show", id=entry["id"])
        assert shown["status"] == "superseded" and shown["superseded_by"] == entry["correction"]
        correction = daemon.call("memory.show", id=entry["correction"])["trace"]
        assert correction["content"].startswith("Invalidated (moved to k8s): deploy with fabric")
    recalled = json.loads(daemon.cli("recall", "--json", "deploy fabric").stdout)["results"]
    assert all(
        r["trace"]["kind"] == "correction" or "chairs" in r["trace"]["content"] for r in recalled
    )


def test_an_agent_session_cannot_invalidate_verified_traces(daemon: Running) -> None:
    verified = daemon.call(
        "memory.remember", content="never deploy on friday", kind="constraint", verified=True
    )["trace"]
    plain = daemon.call("memory.remember", content="deploy on friday is risky")["trace"]
    agent = clean_env(CLAUDECODE="1", CLAUDE_CODE_SESSION_ID="s-1")
    result = daemon.cli(
        "invalidate", "friday", "--reason", "policy changed", "--yes", "--json", env=agent
    )
    done = json.loads(ok(result))
    assert [w["id"] for w in done["written"]] == [plain["id"]]
    assert [r["id"] for r in done["refused"]] == [verified["id"]]
    assert daemon.call("memory.show", id=verified["id"])["status"] == "active"


def test_eval_runs_the_harness_on_a_throwaway_store(tmp_path: Path) -> None:
    cases = tmp_path / "cases.toml"
    cases.write_text(
        'now = "2026-11-30T12:00:00Z"\n'
        '[[trace]]\nkey = "a"\nkind = "observation"\ncontent = "the staging database refreshes nightly"\n'
        '[[trace]]\nkey = "b"\nkind = "observation"\ncontent = "lunch is at noon"\n'
        '[[case]]\nquery = "staging database refresh"\nexpect = ["a"]\n'
        '[[case]]\nquery = "lunch"\nexpect = ["a"]\n'
    )
    result = subprocess.run(
        [sys.executable, "-m", "hikmah_cli", "eval", str(cases), "--k", "1", "--json"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 6  # the second case cannot pass: not an internal error
    report = json.loads(result.stdout)
    passed = [case["passed"] for case in report["hikmah"]["cases"]]
    assert passed == [True, False]
    table = subprocess.run(
        [sys.executable, "-m", "hikmah_cli", "eval", str(cases), "--k", "1"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert table.returncode == 6 and "cases passed" in table.stdout
    assert "1 case failed for Hikmah: --verbose" in table.stdout
    assert "lunch" not in table.stdout  # the failing case's details only with --verbose
    verbose = subprocess.run(
        [sys.executable, "-m", "hikmah_cli", "eval", str(cases), "--k", "1", "--verbose"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert verbose.returncode == 6 and "'lunch'" in verbose.stdout


def test_eval_longmemeval_through_the_cli() -> None:
    sample = Path(__file__).parents[1] / "eval" / "longmemeval-sample.json"
    result = subprocess.run(
        [sys.executable, "-m", "hikmah_cli", "eval", "--longmemeval", str(sample), "--split", "turn"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "one document per turn" in result.stdout and "hikmah, semantic off" in result.stdout
    neither = subprocess.run(
        [sys.executable, "-m", "hikmah_cli", "eval"], capture_output=True, text=True, timeout=60
    )
    assert neither.returncode == 2 and "one of them" in neither.stderr
