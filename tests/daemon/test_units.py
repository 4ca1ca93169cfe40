"""Sans-I/O pieces of the daemon, tested alone: framing and process-tree detection."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hikmah.principal import UNKNOWN_PRINCIPAL
from hikmahd.framing import FrameReader, Oversized
from hikmahd.peers import agent_session

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


def fake_process(proc: Path, pid: int, ppid: int, sid: int, environ: dict[str, str] | None) -> None:
    directory = proc / str(pid)
    directory.mkdir(parents=True)
    (directory / "stat").write_text(f"{pid} (weird ) name) S {ppid} {pid} {sid} 0 0\n")
    if environ is not None:
        (directory / "environ").write_bytes(
            b"".join(f"{k}={v}".encode() + b"\0" for k, v in environ.items())
        )


def test_detection_walks_up_to_the_session_leader(tmp_path: Path) -> None:
    fake_process(tmp_path, 300, 200, 100, {})  # the client, after env -i
    fake_process(tmp_path, 200, 100, 100, {"CODEX_THREAD_ID": "t-1"})  # the agent's shell
    fake_process(tmp_path, 100, 1, 100, {"HOME": "/home/ana"})  # the session leader
    session = agent_session(300, tmp_path)
    assert session is not None and (session.host, session.session_id) == ("codex", "t-1")


def test_detection_stops_at_the_session_leader(tmp_path: Path) -> None:
    fake_process(tmp_path, 300, 200, 200, {})
    fake_process(tmp_path, 200, 100, 200, {})  # the leader: the walk ends here
    fake_process(tmp_path, 100, 1, 100, {"CLAUDECODE": "1"})
    assert agent_session(300, tmp_path) is None


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
