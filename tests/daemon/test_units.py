"""Sans-I/O pieces of the daemon, tested alone: framing and process-tree detection (over
a /proc laid out in a temp dir; tests/daemon/test_escapes.py walks real process trees)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hikmah.access.principal import UNKNOWN_PRINCIPAL
from hikmahd.framing import FrameReader, Oversized
from hikmahd.peers import KnownProcesses, OverBudget, Terminal, agent_session, examine

frames = st.lists(
    st.binary(min_size=1, max_size=60).map(lambda b: b.replace(b"\n", b"x")), max_size=20
)


@given(frames=frames, cuts=st.lists(st.integers(1, 50), max_size=30))
def test_frames_survive_any_chunking(frames: list[bytes], cuts: list[int]) -> None:
    stream = b"".join(f + b"\n" for f in frames)
    reader = FrameReader(limit=1000)
    got: list[bytes | Oversized] = []
    position = 0
    for cut in [*cuts, len(stream)]:
        got.extend(reader.feed(stream[position : position + cut]))
        position += cut
    got.extend(reader.feed(stream[position:]))
    assert got == [f for f in frames if f.strip()]


def test_an_oversized_frame_is_reported_once_and_skipped() -> None:
    reader = FrameReader(limit=10)
    out = list(reader.feed(b"x" * 25))
    out += list(reader.feed(b"y" * 25 + b"\nok\n"))
    assert out == [Oversized(25), b"ok"]
    assert list(reader.feed(b"0123456789ABC\nfine\n")) == [Oversized(13), b"fine"]


def fake_process(
    proc: Path,
    pid: int,
    ppid: int,
    sid: int,
    environ: dict[str, str] | None,
    *,
    argv: tuple[str, ...] = ("bash",),
    exe: str = "/usr/bin/bash",
    tty: int = 0,
    uid: int | None = None,
    caps: int = 0,
) -> None:
    """A process as /proc shows it: stat (with ppid, session, tty and start time), status
    (uids, capabilities), cmdline, comm, exe, and environ unless it is hidden (None)."""
    directory = proc / str(pid)
    directory.mkdir(parents=True)
    rest = " ".join(["0"] * 13)  # flags … cstime, so that the start time is field 22
    (directory / "stat").write_text(
        f"{pid} (weird ) name) S {ppid} {pid} {sid} {tty} 0 {rest} {1000 + pid} 0\n"
    )
    owner = os.getuid() if uid is None else uid
    (directory / "status").write_text(
        f"Name:\tx\nUid:\t{owner}\t{owner}\t{owner}\t{owner}\nCapEff:\t{caps:016x}\n"
    )
    (directory / "cmdline").write_bytes(b"".join(a.encode() + b"\0" for a in argv))
    (directory / "comm").write_text(argv[0].rsplit("/", 1)[-1][:15] + "\n")
    os.symlink(exe, directory / "exe")
    if environ is not None:
        (directory / "environ").write_bytes(
            b"".join(f"{k}={v}".encode() + b"\0" for k, v in environ.items())
        )


def own_status(proc: Path) -> None:
    """/proc/self of the daemon: it holds no capability (an ordinary user)."""
    (proc / "self").mkdir(parents=True, exist_ok=True)
    (proc / "self" / "status").write_text(f"Uid:\t{os.getuid()}\nCapEff:\t0000000000000000\n")


def test_detection_walks_up_to_the_session_leader(tmp_path: Path) -> None:
    fake_process(tmp_path, 300, 200, 100, {})  # the client, after env -i
    fake_process(tmp_path, 200, 100, 100, {"CODEX_THREAD_ID": "t-1"})  # the agent's shell
    fake_process(tmp_path, 100, 1, 100, {"HOME": "/home/ana"})  # the session leader
    session = agent_session(300, tmp_path)
    assert session is not None and (session.host, session.session_id) == ("codex", "t-1")


def test_detection_walks_past_the_session_leader_up_to_pid_1(tmp_path: Path) -> None:
    # setsid env -i: the client leads a session of its own; the agent is above it.
    fake_process(tmp_path, 300, 200, 300, {})
    fake_process(tmp_path, 200, 100, 100, {})
    fake_process(tmp_path, 100, 1, 100, {"CLAUDECODE": "1"})
    session = agent_session(300, tmp_path)
    assert session is not None and session.variables == ("CLAUDECODE",)


@pytest.mark.parametrize(
    ("argv", "exe", "host"),
    [
        (
            ("/home/ana/.local/bin/claude",),
            "/home/ana/.local/share/claude/versions/2.1.332",
            "claude-code",
        ),
        (("claude",), "/usr/bin/node", "claude-code"),  # cli.js under Node, titled claude
        (
            ("node", "/usr/lib/node_modules/@anthropic-ai/claude-code/cli.js"),
            "/usr/bin/node",
            "claude-code",
        ),
        (("node", "/usr/local/bin/codex", "exec"), "/usr/bin/node", "codex"),
        (
            ("/x/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex",),
            "/x/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex",
            "codex",
        ),
        (
            (
                "/h/.local/share/cursor-agent/versions/2026.01.23-916f423/node",
                "--use-system-ca",
                "/h/.local/share/cursor-agent/versions/2026.01.23-916f423/index.js",
            ),
            "/h/.local/share/cursor-agent/versions/2026.01.23-916f423/node",
            "cursor",
        ),
        (
            (
                "/usr/bin/node",
                "--max-old-space-size=12052",
                "/x/node_modules/.bin/gemini",
                "-p",
                "hi",
            ),
            "/usr/bin/node",
            "gemini-cli",
        ),
        (
            ("/x/node_modules/.bin/opencode", "run", "hi"),
            "/x/node_modules/opencode-ai/bin/opencode.exe",
            "opencode",
        ),
    ],
)
def test_exec_env_i_leaves_the_host_above_it_recognised_by_its_process(
    tmp_path: Path, argv: tuple[str, ...], exe: str, host: str
) -> None:
    # exec env -i replaced the agent's shell: no variable is left anywhere in the tree.
    fake_process(tmp_path, 300, 200, 100, {})
    fake_process(tmp_path, 200, 100, 100, {"HOME": "/home/ana"}, argv=argv, exe=exe)
    fake_process(tmp_path, 100, 1, 100, {"HOME": "/home/ana"})
    session = agent_session(300, tmp_path)
    assert session is not None and session.host == host and session.processes, session


def test_a_person_in_a_terminal_gets_the_terminal_and_shell(tmp_path: Path) -> None:
    fake_process(tmp_path, 300, 100, 100, {}, tty=34818)  # hikmah, typed at the shell
    fake_process(tmp_path, 100, 50, 100, {}, tty=34818)  # the shell leads the session
    fake_process(
        tmp_path,
        50,
        1,
        50,
        {},
        argv=("gnome-terminal-server",),
        exe="/usr/libexec/gnome-terminal-server",
    )
    session, terminal = examine(300, tmp_path)
    assert session is None
    assert terminal == Terminal(
        tty=34818, session=100, leader_start=1100, shell=100, shell_start=1100
    )
    assert terminal.name == "/dev/pts/2"


def test_an_orphan_or_a_process_without_a_terminal_has_none(tmp_path: Path) -> None:
    fake_process(tmp_path, 300, 1, 100, {}, tty=34818)  # nohup … & then exit: reparented
    fake_process(tmp_path, 100, 1, 100, {}, tty=34818)
    assert examine(300, tmp_path) == (None, None)
    fake_process(tmp_path, 400, 100, 400, {})  # setsid -f: no controlling terminal
    assert examine(400, tmp_path) == (None, None)


def test_the_walk_stops_at_the_users_service_manager(tmp_path: Path) -> None:
    fake_process(tmp_path, 300, 200, 300, {})
    fake_process(
        tmp_path,
        200,
        1,
        200,
        None,
        argv=("/lib/systemd/systemd", "--user"),
        exe="/usr/lib/systemd/systemd",
    )
    assert agent_session(300, tmp_path) is None  # its environment is not read


def test_a_fake_service_manager_under_an_agent_does_not_stop_the_walk(tmp_path: Path) -> None:
    fake_process(tmp_path, 300, 200, 300, {})
    fake_process(
        tmp_path, 200, 100, 200, {}, argv=("systemd", "--user"), exe="/usr/lib/systemd/systemd"
    )
    fake_process(tmp_path, 100, 1, 100, {"AI_AGENT": "bot"})
    session = agent_session(300, tmp_path)
    assert session is not None and session.host == "ai-agent"


def test_another_users_ancestors_are_walked_through(tmp_path: Path) -> None:
    # su, sudo, login, sshd: root's processes hide their environment and run no agent.
    own_status(tmp_path)
    fake_process(tmp_path, 300, 200, 300, {})
    fake_process(tmp_path, 200, 100, 100, None, uid=0 if os.getuid() else 1000)
    fake_process(tmp_path, 100, 1, 100, {"CODEX_SESSION_ID": "c-2"})
    session = agent_session(300, tmp_path)
    assert session is not None and session.session_id == "c-2"


def test_a_hidden_process_forked_by_a_privileged_one_above_the_session_is_passed(
    tmp_path: Path,
) -> None:
    # ssh: bash <- sshd: ana@pts/0 (ana's, non-dumpable) <- sshd: ana [priv] (root)
    own_status(tmp_path)
    other = 0 if os.getuid() else 1000
    fake_process(tmp_path, 300, 200, 200, {}, tty=34816)
    fake_process(tmp_path, 200, 150, 200, {}, tty=34816)
    fake_process(tmp_path, 150, 120, 120, None)
    fake_process(tmp_path, 120, 1, 120, None, uid=other)
    assert agent_session(300, tmp_path) is None


def test_a_hidden_process_of_the_users_own_above_the_session_makes_it_unknown(
    tmp_path: Path,
) -> None:
    # The agent's non-dumpable helper, then setsid env -i hikmah under it.
    own_status(tmp_path)
    fake_process(tmp_path, 300, 200, 300, {})
    fake_process(tmp_path, 200, 100, 100, None)
    fake_process(tmp_path, 100, 1, 100, {"HOME": "/home/ana"})
    assert agent_session(300, tmp_path) == UNKNOWN_PRINCIPAL


def test_an_unreadable_peer_is_never_a_person(tmp_path: Path) -> None:
    fake_process(tmp_path, 300, 200, 200, None)  # no environ file: unreadable
    assert agent_session(300, tmp_path) == UNKNOWN_PRINCIPAL


def test_an_unreadable_ancestor_makes_the_peer_unknown(tmp_path: Path) -> None:
    # The agent's intermediate process made itself non-dumpable, then ran env -i hikmah.
    fake_process(tmp_path, 300, 200, 100, {})
    fake_process(tmp_path, 200, 100, 100, None)
    fake_process(tmp_path, 100, 1, 100, {"HOME": "/home/ana"})
    assert agent_session(300, tmp_path) == UNKNOWN_PRINCIPAL


def test_a_detection_below_an_unreadable_ancestor_names_the_session(tmp_path: Path) -> None:
    fake_process(tmp_path, 300, 200, 100, {"CLAUDECODE": "1"})
    fake_process(tmp_path, 200, 100, 100, None)
    session = agent_session(300, tmp_path)
    assert session is not None and session.variables == ("CLAUDECODE",)


def test_a_missing_parent_makes_the_peer_unknown(tmp_path: Path) -> None:
    fake_process(tmp_path, 300, 200, 100, {})  # its parent has no /proc entry
    assert agent_session(300, tmp_path) == UNKNOWN_PRINCIPAL


def test_a_tree_deeper_than_the_walk_makes_the_peer_unknown(tmp_path: Path) -> None:
    for pid in range(1000, 1070):
        fake_process(tmp_path, pid, pid + 1, 2000, {})
    assert agent_session(1000, tmp_path) == UNKNOWN_PRINCIPAL


def test_the_log_says_plainly_that_proc_is_missing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    assert agent_session(300, tmp_path / "empty") == UNKNOWN_PRINCIPAL
    assert "is not available to hikmahd" in caplog.text
    assert "treated as an unknown agent session" in caplog.text


def test_the_log_names_the_unreadable_file(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "self").mkdir()
    fake_process(tmp_path, 300, 200, 100, {})
    fake_process(tmp_path, 200, 100, 100, None)
    agent_session(300, tmp_path)
    assert f"cannot read {tmp_path}/200/environ" in caplog.text
    assert "an ancestor of the peer" in caplog.text


def three_processes(proc: Path, shell: dict[str, str]) -> KnownProcesses:
    """A client (300), its shell with environment ``shell`` (200) and the session leader
    (100); what the daemon keeps of them."""
    own_status(proc)
    fake_process(proc, 300, 200, 100, {})
    fake_process(proc, 200, 100, 100, shell)
    fake_process(proc, 100, 1, 100, {})
    return KnownProcesses(proc=proc)


def test_a_known_ancestor_that_execs_an_agent_host_is_read_again(tmp_path: Path) -> None:
    # The daemon keeps what it read of a client's ancestors; a person's shell that then
    # runs `exec codex` is the same pid and start time, another program.
    known = three_processes(tmp_path, {"HOME": "/home/ana"})
    assert examine(300, tmp_path, known) == (None, None)
    shell = tmp_path / "200"
    (shell / "exe").unlink()
    os.symlink("/x/node_modules/@openai/codex/bin/codex", shell / "exe")
    (shell / "cmdline").write_bytes(b"codex\0")
    session, _ = examine(300, tmp_path, known)
    assert session is not None and session.host == "codex"


def test_a_renamed_known_ancestor_is_read_again(tmp_path: Path) -> None:
    known = three_processes(tmp_path, {})
    assert examine(300, tmp_path, known) == (None, None)
    stat = tmp_path / "200" / "stat"
    stat.write_text(stat.read_text().replace("(weird ) name)", "(claude)"))
    (tmp_path / "200" / "environ").write_bytes(b"CLAUDECODE=1\0")
    session, _ = examine(300, tmp_path, known)
    assert session is not None and session.variables == ("CLAUDECODE",)


def test_an_agent_found_once_in_a_known_process_stays_found(tmp_path: Path) -> None:
    # Its environment rewritten in place (same program): what was read first is kept.
    known = three_processes(tmp_path, {"CODEX_THREAD_ID": "t-1"})
    assert examine(300, tmp_path, known)[0] is not None
    (tmp_path / "200" / "environ").write_bytes(b"HOME=/home/ana\0")
    session, _ = examine(300, tmp_path, known)
    assert session is not None and session.session_id == "t-1"
    assert examine(300, tmp_path)[0] is None  # read afresh, it has no mark now


def test_a_walk_on_a_budget_reads_no_more_than_it_allows() -> None:
    known = KnownProcesses()
    unbudgeted = examine(os.getpid(), known=KnownProcesses())
    with pytest.raises(OverBudget):
        examine(os.getpid(), known=known, budget=0)
    assert examine(os.getpid(), known=known, budget=1 << 20) == unbudgeted
    # Known now, only their stat and executable are read again: no budget is spent.
    assert examine(os.getpid(), known=known, budget=0) == unbudgeted


def test_a_process_whose_size_the_kernel_does_not_say_is_over_any_budget(
    tmp_path: Path,
) -> None:
    own_status(tmp_path)
    fake_process(tmp_path, 300, 1, 300, {})  # a stat without fields 48 to 51
    with pytest.raises(OverBudget):
        examine(300, tmp_path, KnownProcesses(proc=tmp_path), budget=1 << 20)
