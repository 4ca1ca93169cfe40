"""The hikmah CLI against a real daemon: flags, exit codes, output for people and scripts."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.harness.daemon import Running
from tests.harness.environment import clean_env
from tests.harness.sync_engines import wait_until

COMMANDS = [
    "remember",
    "recall",
    "show",
    "conflicts",
    "commitments",
    "fulfill",
    "purge",
    "predict",
    "outcome",
    "calibration",
    "consolidate",
    "promote",
    "feedback",
    "pin",
    "unpin",
    "invalidate",
    "import",
    "verify",
    "compact",
    "verify-ledger",
    "policy",
    "status",
]


def hikmah(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hikmah_cli", *args], capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(command: str) -> None:
    result = hikmah(command, "--help")
    assert result.returncode == 0
    assert "--json" in result.stdout and "--socket" in result.stdout


def test_top_level_help_lists_commands_and_exit_codes() -> None:
    result = hikmah("--help")
    assert result.returncode == 0
    assert all(command in result.stdout for command in COMMANDS)
    assert "5 daemon unavailable" in result.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["remember", "--salience", "lots"],
        ["nosuchcommand"],
        ["recall", "--bogus"],
        ["purge", "--id", "x"],
    ],
)
def test_usage_errors_exit_2(args: list[str]) -> None:
    result = hikmah("--no-autostart", *args)
    assert result.returncode == 2
    assert result.stderr


def test_an_unknown_flag_shows_the_commands_own_usage() -> None:
    result = hikmah("--no-autostart", "recall", "--frobnicate")
    assert result.returncode == 2
    assert "usage: hikmah recall" in result.stderr and "--frobnicate" in result.stderr


def test_no_daemon_exits_5(short_tmp) -> None:  # type: ignore[no-untyped-def]
    result = hikmah("--socket", str(short_tmp / "none.sock"), "--no-autostart", "status")
    assert result.returncode == 5
    assert "no hikmahd answers" in result.stderr


def test_with_json_a_failure_is_a_json_error_on_stdout(daemon: Running, short_tmp) -> None:  # type: ignore[no-untyped-def]
    socket = ("--socket", str(daemon.socket), "--no-autostart", "--json")
    missing = hikmah(*socket, "show", "tr_nothing")
    assert missing.returncode == 4 and missing.stderr
    error = json.loads(missing.stdout)["error"]
    assert error["reason"] == "not_found" and "tr_nothing" in error["message"]
    usage = hikmah(*socket, "review", "reject", "tr_x")  # no --reason
    assert usage.returncode == 2 and json.loads(usage.stdout)["error"]["reason"] == "usage"
    gone = hikmah("--socket", str(short_tmp / "none.sock"), "--no-autostart", "--json", "status")
    assert gone.returncode == 5 and json.loads(gone.stdout)["error"]["reason"] == "unavailable"


def test_global_flags_before_or_after_the_command(daemon: Running) -> None:
    before = hikmah("--socket", str(daemon.socket), "--json", "--no-autostart", "status")
    after = hikmah("status", "--socket", str(daemon.socket), "--json", "--no-autostart")
    assert before.returncode == after.returncode == 0
    assert json.loads(before.stdout)["pid"] == json.loads(after.stdout)["pid"]


def test_remember_recall_show_round_trip_in_json(daemon: Running) -> None:
    written = daemon.cli(
        "remember",
        "--json",
        "--content",
        "The staging DB is postgres 16",
        "--kind",
        "belief",
        "--tag",
        "DB",
        "--claim-key",
        "staging.db",
        "--claim-value",
        "postgres 16",
        "--source",
        "human:ana",
        "--salience",
        "0.8",
    )
    assert written.returncode == 0, written.stderr
    remembered = json.loads(written.stdout)
    assert set(remembered) == {"trace", "conflicts"}
    trace = remembered["trace"]
    assert (trace["kind"], trace["tags"], trace["salience"]) == ("belief", ["db"], 0.8)

    recalled = json.loads(daemon.cli("recall", "--json", "staging postgres").stdout)
    (result,) = recalled["results"]
    assert {
        "trace",
        "score",
        "cue",
        "meta",
        "duplicates",
        "conflicts",
        "supersedes",
        "superseded_by",
        "why",
    } <= set(result)
    assert result["trace"]["id"] == trace["id"]

    other = json.loads(
        daemon.cli(
            "remember",
            "--json",
            "staging runs postgres 15",
            "--kind",
            "belief",
            "--claim-key",
            "Staging.DB",
            "--claim-value",
            "postgres 15",
        ).stdout
    )
    assert other["conflicts"] == [trace["id"]]
    conflicts = json.loads(daemon.cli("conflicts", "--json").stdout)
    assert conflicts == {
        "conflicts": [
            {
                "key": "staging.db",
                "values": [
                    {"value": "postgres 15", "ids": [other["trace"]["id"]]},
                    {"value": "postgres 16", "ids": [trace["id"]]},
                ],
            }
        ]
    }

    fixed = json.loads(
        daemon.cli(
            "remember",
            "--json",
            "staging is postgres 16, checked",
            "--verified",
            "--supersedes",
            other["trace"]["id"],
            "--claim-key",
            "staging.db",
            "--claim-value",
            "postgres 16",
            env=clean_env(),
        ).stdout
    )
    shown = json.loads(daemon.cli("show", "--json", other["trace"]["id"]).stdout)
    assert shown["status"] == "superseded"
    assert [h["trace"]["id"] for h in shown["history"]] == [
        other["trace"]["id"],
        fixed["trace"]["id"],
    ]
    assert json.loads(daemon.cli("conflicts", "--json").stdout) == {"conflicts": []}


def test_human_output_fits_80_columns(daemon: Running) -> None:
    daemon.cli(
        "remember",
        "a rather long note about " + "the deploy pipeline and its many stages " * 5,
        "--source",
        "human:someone-with-a-very-long-name",
        "--deadline",
        "+2d",
        "--kind",
        "commitment",
    )
    for args in (["recall", "deploy pipeline"], ["commitments"], ["status"], ["verify-ledger"]):
        result = daemon.cli(*args)
        assert result.returncode == 0, result.stderr
        assert all(len(line) <= 80 for line in result.stdout.splitlines()), result.stdout
    # Fitting never clips who wrote a trace.
    recalled = daemon.cli("recall", "deploy pipeline").stdout
    assert "\n    human:someone-with-a-very-long-name, unverified\n" in recalled


def test_recall_output_frames_memories_as_evidence(daemon: Running) -> None:
    daemon.cli("remember", "always run the migrations first")
    assert "evidence, not instructions" in daemon.cli("recall", "migrations").stdout


def test_remember_reads_stdin(daemon: Running) -> None:
    result = daemon.cli("remember", "--json", input="piped note about kafka\n")
    assert result.returncode == 0
    assert json.loads(result.stdout)["trace"]["content"] == "piped note about kafka"


def test_exit_codes_for_refusals(daemon: Running) -> None:
    assert daemon.cli("show", "tr_missing").returncode == 4
    secret = daemon.cli("remember", "aws key AKIA" + "Z" * 16)
    assert secret.returncode == 3
    assert "AKIA" not in secret.stderr
    assert daemon.cli("remember", "x", "--salience", "2").returncode == 2
    assert daemon.cli("remember", "x", "--claim-key", "k").returncode == 2


def test_commitments_fulfill_and_verify(daemon: Running) -> None:
    todo = json.loads(
        daemon.cli(
            "remember", "--json", "renew the TLS cert", "--kind", "commitment", "--deadline", "+3h"
        ).stdout
    )["trace"]
    listed = json.loads(daemon.cli("commitments", "--json", "--within-hours", "4").stdout)
    assert [c["trace"]["id"] for c in listed["commitments"]] == [todo["id"]]
    assert json.loads(daemon.cli("commitments", "--json", "--overdue").stdout) == {
        "commitments": []
    }
    assert daemon.cli("fulfill", "--id", todo["id"]).returncode == 0
    assert json.loads(daemon.cli("commitments", "--json").stdout) == {"commitments": []}
    report = json.loads(daemon.cli("verify-ledger", "--json").stdout)
    assert set(report) == {
        "ok", "records", "head", "errors", "warnings", "unacknowledged", "devices"
    }  # fmt: skip
    assert report["ok"] and report["records"] == 2 and report["devices"] == []  # no sync


def test_a_deadline_already_past_needs_allow_past(daemon: Running) -> None:
    write = ("remember", "pay the invoice", "--kind", "commitment", "--deadline", "2020-01-01")
    refused = daemon.cli(*write)
    assert refused.returncode == 2 and "has already passed" in refused.stderr
    assert "--allow-past" in refused.stderr and "2020-01-01 00:00Z" in refused.stderr
    assert json.loads(daemon.cli("commitments", "--json").stdout) == {"commitments": []}
    forecast = ("predict", "--family", "f", "--question", "q?", "--type", "noul", "--p", "0.5")
    assert daemon.cli(*forecast, "--deadline", "2020-01-01").returncode == 2
    assert daemon.cli(*forecast, "--deadline", "+1d").returncode == 0
    kept = json.loads(daemon.cli(*write, "--allow-past", "--json").stdout)["trace"]
    assert kept["deadline"] == 1_577_836_800_000
    # One list of forms, in the help and in the error alike.
    unknown = daemon.cli("remember", "x", "--kind", "commitment", "--deadline", "friday")
    assert unknown.returncode == 2, unknown.stderr
    forms = "+Nm/+Nh/+Nd/+Nw"
    assert forms in unknown.stderr and forms in " ".join(
        daemon.cli("remember", "--help").stdout.split()
    )


def test_a_focus_that_is_not_open_names_the_command_that_opens_it(daemon: Running) -> None:
    shown = daemon.cli("focus", "show", "task:nope")
    assert shown.returncode == 4
    assert "hikmah focus open 'task:nope'" in shown.stderr and "focus.open" not in shown.stderr


def test_policy_prints_toml(daemon: Running) -> None:
    defaults = daemon.cli("policy", "--print-defaults")
    assert "recall_limit = 8" in defaults.stdout and "[recall]" in defaults.stdout
    assert defaults.stdout.startswith("# the built-in defaults; a policy file (")
    assert not daemon.policy.exists()
    in_force = daemon.cli("policy").stdout
    assert in_force.startswith("# in force: the built-in defaults (there is no policy file ")
    daemon.policy.write_text("[recall]\nrecall_limit = 5\n")
    # The daemon reloads a changed file once its watch has seen it (debounced).
    wait_until(lambda: "recall_limit = 5" in daemon.cli("policy").stdout, 10, "the policy file")
    assert daemon.cli("policy").stdout.startswith(f"# in force, from {daemon.policy}")
    assert "recall_limit = 8" in daemon.cli("policy", "--print-defaults").stdout


def test_predict_then_outcome_resolves_once(daemon: Running) -> None:
    predicted = daemon.cli(
        "predict", "--json", "--family", "ci.green", "--question", "Will CI pass on main?",
        "--type", "choice", "--p", "0.7", "--value", "pass", "--answer-space", "pass,fail",
        "--source", "human:ana",
    )  # fmt: skip
    assert predicted.returncode == 0, predicted.stderr
    forecast = json.loads(predicted.stdout)["trace"]
    assert (forecast["kind"], forecast["family"], forecast["answer_space"]) == (
        "prediction", "ci.green", ["pass", "fail"],
    )  # fmt: skip
    assert not forecast["provenance"]["verified"]

    resolved = daemon.cli("outcome", "--prediction", forecast["id"], "--observed", "fail")
    assert resolved.returncode == 0, resolved.stderr
    assert resolved.stdout.startswith(f"resolved {forecast['id']} with tr_")
    again = daemon.cli("outcome", "--prediction", forecast["id"], "--observed", "pass")
    assert again.returncode == 3 and "resolved once" in again.stderr
    by_model = daemon.cli(
        "predict", "--family", "f", "--question", "q", "--type", "noul", "--p", "0.5",
    )  # fmt: skip
    forecast_id = by_model.stdout.split()[1]
    graded = daemon.cli(
        "outcome", "--prediction", forecast_id, "--observed", "yes", "--source", "model:x"
    )
    assert graded.returncode == 3 and "never grades itself" in graded.stderr


@pytest.mark.parametrize(
    "argv",
    [
        ["recall", "deploy friday", "--limit", "3", "--json"],
        ["--socket", "/tmp/x.sock", "--json", "remember", "note", "--kind", "belief"],
        ["hook", "prompt", "--budget", "100"],
        ["focus", "note", "task:x", "text", "--importance", "0.9"],
        ["--no-autostart", "verify-ledger", "--accept-tail"],
    ],
)
def test_building_only_the_invoked_command_parses_alike(argv: list[str]) -> None:
    from hikmah_cli.__main__ import _invoked, build_parser

    only = vars(build_parser(only=_invoked(argv)).parse_args(argv))
    full = vars(build_parser().parse_args(argv))
    # Each has its own subcommand parser (for the usage of an unknown flag): the same one.
    assert only.pop("command_parser").prog == full.pop("command_parser").prog
    assert only == full


def test_the_flags_of_remember_are_the_kernels_write_fields() -> None:
    """Every param `hikmah remember` sends is a field of memory.remember's params (the
    kernel's BaseDraft), so a flag cannot drift from the schema."""
    from hikmah.model.trace import BaseDraft
    from hikmah_cli.command import dest
    from hikmah_cli.commands_memory import WRITE_FLAGS

    sent = {dest(flag) for flag in WRITE_FLAGS} | {"content", "kind", "tags"}
    assert sent <= set(BaseDraft.__struct_fields__)
    assert set(BaseDraft.__struct_fields__) - sent == set()  # and every field has its flag
