"""``hikmah export`` and ``hikmah import`` end to end: real daemons, real files, the real CLI.

Traces travel between two daemons with their ids, times, statuses and corrections; bad
lines are refused by number while the rest lands; reference ledgers (v1 from the
reference's own tests, v2 written for these tests) are verified before anything is
imported, and a break or a forged tail is reported where it is."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hikmah.ledger.chain import decode_record, encode_record
from tests.harness.daemon import Running
from tests.harness.environment import clean_env

FIXTURES = Path(__file__).parents[1] / "fixtures"
V1 = FIXTURES / "reference-ledger-v1.jsonl"
V2 = FIXTURES / "reference-ledger-v2.jsonl"
ID = "tr_5a0c0f3e9d2b7a0"  # the v2 fixture's ids: ID + 1..7
KEY = "AKIAIOSFODNN7EXAMPLE"  # AWS's documented example access key id
FRAME = 1 << 20


@pytest.fixture
def other(short_tmp: Path) -> Iterator[Running]:
    """A second daemon with a fresh data directory."""
    root = short_tmp / "b"
    root.mkdir()
    running = Running(root).start()
    try:
        yield running
    finally:
        running.stop()


def cli(daemon: Running, *args: str) -> subprocess.CompletedProcess[str]:
    return daemon.cli(*args, env=clean_env())


def ok(daemon: Running, *args: str) -> Any:
    result = cli(daemon, *args, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def import_json(daemon: Running, path: Path, *flags: str, code: int = 0) -> Any:
    result = cli(daemon, "import", str(path), "--json", *flags)
    assert result.returncode == code, (result.stdout, result.stderr)
    return json.loads(result.stdout)


def status_of(daemon: Running, trace_id: str) -> str | None:
    with daemon.connect() as conn:
        reply = conn.request("memory.show", id=trace_id)
    return None if "error" in reply else str(reply["result"]["status"])


def counts(daemon: Running) -> dict[str, int]:
    result: dict[str, int] = daemon.call("daemon.status")["counts"]
    return result


def export_lines(daemon: Running, *flags: str) -> list[dict[str, Any]]:
    result = cli(daemon, "export", *flags)
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def fill(daemon: Running) -> dict[str, str]:
    """A memory with every status: a correction chain, commitments fulfilled both ways, a
    resolved forecast, a purged trace."""
    ids: dict[str, str] = {}

    def write(name: str, *args: str) -> None:
        ids[name] = ok(daemon, "remember", *args)["trace"]["id"]

    write("rule", "Never deploy on Fridays", "--kind", "constraint", "--verified", "--tag", "ops")
    write("fix", "Fridays only for hotfixes", "--kind", "correction", "--verified",
          "--supersedes", ids["rule"])  # fmt: skip
    write("region", "The region is eu-west-1", "--kind", "belief", "--claim-key", "region",
          "--claim-value", "eu-west-1", "--source", "doc:runbook", "--scope", "project:/srv/app")  # fmt: skip
    write("report", "Send the quarterly report", "--kind", "commitment", "--deadline", "+2d")
    ok(daemon, "fulfill", ids["report"])
    write("cert", "Renew the TLS certificate", "--kind", "commitment")
    write("renewed", "certificate renewed", "--kind", "outcome", "--fulfills", ids["cert"])
    forecast = ok(daemon, "predict", "--family", "ci.green", "--question", "Will CI pass?",
                  "--type", "noul", "--p", "0.7")  # fmt: skip
    ids["forecast"] = forecast["trace"]["id"]
    ok(daemon, "outcome", "--prediction", ids["forecast"], "--observed", "yes")
    write("oops", "recorded by mistake")
    ok(daemon, "purge", "--id", ids["oops"], "--reason", "mistake")
    write("open", "Call the landlord", "--kind", "commitment")
    return ids


def test_export_then_import_into_a_fresh_daemon_keeps_everything(
    daemon: Running, other: Running, tmp_path: Path
) -> None:
    ids = fill(daemon)
    dump = tmp_path / "memory.jsonl"
    ok(daemon, "export", "--include-superseded", "--output", str(dump))
    assert dump.stat().st_mode & 0o777 == 0o600
    lines = [json.loads(line) for line in dump.read_text().splitlines()]
    assert ids["oops"] not in {line["id"] for line in lines}
    assert {line["id"]: line["status"] for line in lines} == {
        ids["rule"]: "superseded",
        ids["fix"]: "active",
        ids["region"]: "active",
        ids["report"]: "fulfilled",
        ids["cert"]: "fulfilled",
        ids["renewed"]: "active",
        ids["forecast"]: "fulfilled",
        lines[7]["id"]: "active",  # the forecast's outcome
        ids["open"]: "active",
    }

    report = import_json(other, dump)
    assert (report["written"], report["already"], report["refused"]) == (9, 0, [])
    assert report["notes"] == []
    assert export_lines(other, "--include-superseded") == lines  # same traces, same order
    assert status_of(other, ids["rule"]) == "superseded"
    shown = other.call("memory.show", id=ids["fix"])
    assert [h["trace"]["id"] for h in shown["history"]] == [ids["rule"], ids["fix"]]
    assert other.call("promises.list")["commitments"] == []  # both commitments done
    assert other.call("memory.calibration")["families"][0]["family"] == "ci.green"
    assert other.call("ledger.verify")["ok"]

    again = import_json(other, dump)
    assert (again["written"], again["already"], again["refused"]) == (0, 9, [])
    assert counts(other) == counts(daemon) | {"purged": 0}


def test_the_default_export_is_current_memory_and_imports_on_its_own(
    daemon: Running, other: Running, tmp_path: Path
) -> None:
    ids = fill(daemon)
    lines = export_lines(daemon)
    assert ids["rule"] not in {line["id"] for line in lines}
    fix = next(line for line in lines if line["id"] == ids["fix"])
    assert fix["supersedes"] is None  # the trace it corrected is not in the file
    dump = tmp_path / "current.jsonl"
    dump.write_text("".join(json.dumps(line) + "\n" for line in lines))
    report = import_json(other, dump)
    assert (report["written"], report["refused"]) == (len(lines), [])
    assert counts(other)["superseded"] == 0


def test_refused_lines_are_reported_by_number_and_the_rest_imported(
    daemon: Running, tmp_path: Path
) -> None:
    dump = tmp_path / "mixed.jsonl"
    dump.write_text(
        "\n".join(
            [
                json.dumps({"kind": "observation", "content": "the printer jams on A3"}),
                json.dumps({"content": f"the deploy key is {KEY}"}),
                "",
                json.dumps({"kind": "rumour", "content": "lunch is free on Fridays"}),
                "{not json",
                json.dumps(["an", "array"]),
                json.dumps({"kind": "belief", "content": "the VPN needs MFA", "tags": ["it"]}),
                json.dumps({"content": "colour of the door", "colour": "red"}),
            ]
        )
        + "\n"
    )
    result = cli(daemon, "import", str(dump))
    assert result.returncode == 3
    assert KEY not in result.stdout + result.stderr
    refused = [line for line in result.stderr.splitlines() if "refused" in line]
    assert [line.split(" refused")[0] for line in refused] == [
        "hikmah import: line 2",
        "hikmah import: line 4",
        "hikmah import: line 5",
        "hikmah import: line 6",
        "hikmah import: line 8",
    ]
    assert "credential" in refused[0] and "$.kind" in refused[1] and "not JSON" in refused[2]
    assert "array" in refused[3] and "colour" in refused[4]
    assert "2 written" in result.stdout and "5 refused" in result.stdout
    found = daemon.call("memory.recall", query="printer VPN MFA")["results"]
    assert len(found) == 2


def test_a_file_of_many_pages_lands_in_file_order(daemon: Running, tmp_path: Path) -> None:
    """Pages are read and encoded while the daemon writes the one before, one in flight at
    a time: a correction on the page after the trace it corrects finds it, and lines
    refused on either side of a page's edge are reported by their numbers."""
    lines = [json.dumps({"content": f"note {n} about the build farm"}) for n in range(1, 1251)]
    lines[498] = json.dumps({"id": "tr_page_edge", "content": "the build farm is in hall B"})
    lines[499] = "{not json"
    correction = {"kind": "correction", "content": "the build farm moved to hall C"}
    lines[501] = json.dumps(correction | {"supersedes": "tr_page_edge"})
    lines[1000] = json.dumps(["an", "array"])
    dump = tmp_path / "many.jsonl"
    dump.write_text("\n".join(lines) + "\n")
    report = import_json(daemon, dump, code=3)
    assert report["written"] == 1248 and report["lines"] == 1250
    assert [r["line"] for r in report["refused"]] == [500, 1001]
    assert status_of(daemon, "tr_page_edge") == "superseded"
    assert counts(daemon)["active"] == 1247


def test_an_unreadable_file_is_a_usage_error(daemon: Running, tmp_path: Path) -> None:
    result = cli(daemon, "import", str(tmp_path / "missing.jsonl"))
    assert result.returncode == 2 and "cannot read" in result.stderr


def test_the_reference_v1_ledger_imports_with_its_statuses(daemon: Running) -> None:
    report = import_json(daemon, V1)
    assert (report["verified"], report["written"], report["linked"]) == (4, 3, 1)
    assert report["break"] is None and report["refused"] == []
    assert status_of(daemon, "tr_0e21be5e8ff62671") == "superseded"
    assert status_of(daemon, "tr_8964e9fa774af32f") == "active"
    belief = daemon.call("memory.show", id="tr_e9545ea6fe93d0ea")["trace"]
    assert (belief["created_at"], belief["claim_value"]) == (1790016343629, "us-east-1")
    rule = daemon.call("memory.show", id="tr_0e21be5e8ff62671")["trace"]
    assert rule["provenance"]["verified"] and rule["tags"] == ["deployment"]
    again = import_json(daemon, V1)
    assert (again["written"], again["already"], again["linked"]) == (0, 3, 1)


def test_the_reference_v2_ledger_imports_with_its_statuses(daemon: Running) -> None:
    report = import_json(daemon, V2)
    assert (report["verified"], report["written"], report["linked"]) == (9, 8, 1)
    assert report["refused"] == []
    assert {n: status_of(daemon, f"{ID}{n}") for n in range(1, 7)} == {
        1: "superseded",
        2: "active",
        3: "active",
        4: "fulfilled",
        5: None,  # purged: gone from show
        6: "active",
    }
    belief = daemon.call("memory.show", id=f"{ID}2")["trace"]
    assert "Zürich" in belief["content"]
    commitment = daemon.call("memory.show", id=f"{ID}4")["trace"]
    assert commitment["deadline"] == 1_790_100_000_000 + 7 * 86_400_000
    assert counts(daemon)["purged"] == 1
    assert daemon.call("ledger.verify")["ok"]


def test_a_broken_chain_is_refused_whole_unless_forced(daemon: Running) -> None:
    broken = FIXTURES / "reference-ledger-v2-broken.jsonl"
    result = cli(daemon, "import", str(broken))
    assert result.returncode == 3
    assert "line 3, seq 3" in result.stderr and "altered" in result.stderr
    assert "nothing was imported" in result.stderr
    assert sum(counts(daemon).values()) == 0
    forced = import_json(daemon, broken, "--force-broken-chain", code=3)
    assert (forced["verified"], forced["written"], forced["imported"]) == (2, 2, True)
    assert forced["break"]["seq"] == 3
    assert status_of(daemon, f"{ID}1") == "active"  # its correction was not imported
    assert status_of(daemon, f"{ID}3") is None


def test_a_forged_tail_is_reported_and_left_out(daemon: Running) -> None:
    forged = FIXTURES / "reference-ledger-v2-forged-tail.jsonl"
    refused = import_json(daemon, forged, code=3)
    assert refused["imported"] is False and refused["break"]["line"] == 10
    forced = import_json(daemon, forged, "--force-broken-chain", code=3)
    assert (forced["verified"], forced["written"], forced["refused"]) == (9, 8, [])
    assert status_of(daemon, f"{ID}7") is None
    assert status_of(daemon, f"{ID}6") == "active"


def test_a_rechained_forged_tail_is_caught_by_the_pinned_head(
    daemon: Running, tmp_path: Path
) -> None:
    lines = V2.read_bytes().splitlines()
    last = decode_record(lines[-1])
    forged = encode_record(
        10, last.hash, b'{"type":"purge","id":"tr_5a0c0f3e9d2b7a01","reason":"cleanup"}'
    )
    tampered = tmp_path / "memory.jsonl"
    tampered.write_bytes(b"\n".join([*lines, forged.line]) + b"\n")
    pinned = f"9:{last.hash}"
    report = import_json(daemon, tampered, "--expect-head", pinned, code=3)
    assert report["break"]["seq"] == 10 and "past the pinned head" in report["break"]["reason"]
    assert sum(counts(daemon).values()) == 0
    assert import_json(daemon, V2, "--expect-head", pinned)["written"] == 8
    bad = cli(daemon, "import", str(V2), "--expect-head", "nine")
    assert bad.returncode == 2


def test_the_bricked_ledger_reports_the_missing_trace_by_seq(daemon: Running) -> None:
    report = import_json(daemon, FIXTURES / "reference-ledger-v1-bricked.jsonl", code=3)
    assert report["written"] == 1 and report["linked"] == 0
    assert [(r["line"], r["seq"]) for r in report["refused"]] == [(2, 2), (3, 3)]
    assert "tr_doesnotexist" in report["refused"][0]["reason"]
    assert "never existed" in report["refused"][1]["reason"]
    assert status_of(daemon, "tr_1b733cc25f800745") == "active"
    assert status_of(daemon, "tr_doesnotexist") is None  # nothing invented
    assert status_of(daemon, "tr_6a69eb329cdb71b5") is None


def test_export_pages_stay_under_the_frame_limit(daemon: Running) -> None:
    with daemon.connect() as conn:
        written = [
            conn.call("memory.remember", content=f"log excerpt {n} " + "lorem ipsum " * 12_000)[
                "trace"
            ]["id"]
            for n in range(24)
        ]
        after, pages, seen = None, 0, []
        while True:
            conn.send(
                {"jsonrpc": "2.0", "method": "memory.export", "params": {"after": after}, "id": 1}
            )
            while b"\n" not in conn.buffer:
                conn.buffer += conn.sock.recv(1 << 16)
            assert conn.buffer.index(b"\n") < FRAME
            page = conn.read()["result"]
            pages += 1
            seen += [t["id"] for t in page["traces"]]
            after = page["next"]
            if after is None:
                break
    assert seen == written and pages > 2
    assert [line["id"] for line in export_lines(daemon)] == written


def test_progress_is_drawn_on_a_terminal(daemon: Running, tmp_path: Path) -> None:
    dump = tmp_path / "notes.jsonl"
    dump.write_text("".join(json.dumps({"content": f"note {n}"}) + "\n" for n in range(3)))
    code, out, shown = daemon.cli_on_terminal("import", str(dump), env=clean_env())
    assert code == 0
    assert "imported 3/3 lines" in shown and "100%" in shown
    assert "\r" not in out  # the summary on stdout is not the progress bar
