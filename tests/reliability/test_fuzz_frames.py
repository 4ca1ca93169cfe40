"""Frames: the frame reader and the connection around it take any
bytes, split anywhere, and never fail: every complete line gets its JSON-RPC answer,
an oversized one its ``too_large``, and nothing buffers past the limit.

The frame reader is fuzzed against a reference splitter with a tiny limit (so
oversized frames are common); the connection, over in-memory streams, with the
real dispatcher behind it; and a corpus of hostile frames goes through a real
daemon's socket. ``bench/stress/fuzz_atheris.py`` runs the same reader under a
coverage-guided fuzzer.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hikmahd.framing import MAX_FRAME, FrameReader, Oversized
from tests.harness.daemon import Running
from tests.harness.sockets import Conn

from .harness import fds_back_to, steady_fds
from .inprocess import InProcess, in_process, problems
from .strategies import EXAMPLES, json_values, nested, request_line

LIMIT = 16
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def reference(stream: bytes, limit: int) -> list[bytes | str]:
    """What a reader must yield for ``stream``: each complete non-blank line, or
    ``"big"`` for a line (or a trailing partial line) longer than ``limit``."""
    *lines, rest = stream.split(b"\n")
    out: list[bytes | str] = []
    for line in lines:
        if len(line) > limit:
            out.append("big")
        elif line.strip():
            out.append(line)
    if len(rest) > limit:
        out.append("big")
    return out


def chunked(stream: bytes, cuts: list[int]) -> Iterator[bytes]:
    edges = sorted({0, len(stream), *(c % (len(stream) + 1) for c in cuts)})
    for start, end in itertools.pairwise(edges):
        yield stream[start:end]


lines = st.one_of(
    st.binary(max_size=3 * LIMIT),
    st.sampled_from([b"", b" ", b"\r", b"\t \t", b"\xff\xfe", b"{}", b"[]", b"x" * LIMIT]),
)
streams = st.lists(lines, max_size=12).map(b"\n".join)


@SETTINGS
@given(stream=streams, cuts=st.lists(st.integers(0, 10_000), max_size=20))
def test_the_frame_reader_agrees_with_a_reference_splitter(stream: bytes, cuts: list[int]) -> None:
    reader = FrameReader(limit=LIMIT)
    got: list[bytes | str] = []
    for chunk in chunked(stream, cuts):
        for frame in reader.feed(chunk):
            if isinstance(frame, Oversized):
                assert frame.size > LIMIT
                got.append("big")
            else:
                assert b"\n" not in frame and len(frame) <= LIMIT
                got.append(frame)
        # Memory stays bounded whatever arrives: an incomplete frame is at most the limit.
        assert reader.pending <= LIMIT
    assert got == reference(stream, LIMIT)


@SETTINGS
@given(size=st.integers(MAX_FRAME - 2, MAX_FRAME + 2), cut=st.integers(0, MAX_FRAME + 3))
def test_the_real_limit_is_exact_in_any_split(size: int, cut: int) -> None:
    frame = b"[" + b" " * (size - 2) + b"]"
    reader = FrameReader()
    got = [*reader.feed(frame[:cut]), *reader.feed(frame[cut:] + b"\n"), *reader.feed(b"[1]\n")]
    if size <= MAX_FRAME:
        assert got == [frame, b"[1]"]
    else:
        assert len(got) == 2 and isinstance(got[0], Oversized) and got[1] == b"[1]"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcess]:
    with in_process(tmp_path_factory.mktemp("frames")) as daemon:
        yield daemon


def _frames() -> st.SearchStrategy[bytes]:
    valid = st.builds(
        request_line,
        st.sampled_from(["daemon.status", "memory.recall", "memory.show", "nope", ""]),
        json_values,
        st.one_of(st.integers(), st.text(max_size=5), st.none(), st.booleans()),
    )
    junk = st.one_of(
        st.binary(max_size=200).map(lambda b: b.replace(b"\n", b" ")),
        json_values.map(lambda v: json.dumps(v).encode()),
        st.integers(1, 200).map(lambda d: json.dumps(nested(d)).encode()),
        st.sampled_from(
            [
                b'{"jsonrpc":"2.0","method":"daemon.status","id":1',  # cut short
                b'\xef\xbb\xbf{"jsonrpc":"2.0","method":"daemon.status","id":1}',  # a BOM
                b'{"jsonrpc":"2.0","method":"daemon.status","id":NaN}',
                b'{"jsonrpc":"2.0","method":"daemon.status","id":1e999}',
                b'{"jsonrpc":"2.0","method":"daemon.status","id":"\\ud800"}',
                b'{"jsonrpc":"2.0","method":"daemon.status","id":"\xc3\x28"}',  # bad UTF-8
                b'{"jsonrpc":"2.0","jsonrpc":"1.0","method":"daemon.status","id":1}',
                b'{"jsonrpc":"2.0","method":"daemon.status","id":1}\x00',
                b"[" * 200 + b"]" * 200,
            ]
        ),
    )
    return st.one_of(valid, junk).map(lambda frame: frame.replace(b"\n", b" "))


@SETTINGS
@given(frames=st.lists(_frames(), min_size=1, max_size=6), cuts=st.lists(st.integers(0, 4000)))
def test_any_bytes_through_a_connection_get_json_rpc_answers(
    served: InProcess, frames: list[bytes], cuts: list[int]
) -> None:
    stream = b"\n".join(frames) + b"\n"
    exchange = served.exchange(list(chunked(stream, cuts)))
    assert exchange.seconds < 5, f"{exchange.seconds:.1f} s for {len(frames)} frames"
    answered = [f for f in frames if f.strip()]
    # A frame without an "id" member is a notification and gets no answer.
    assert len(exchange.replies) <= len(answered)
    for reply in exchange.replies:
        assert not problems(reply), (problems(reply), reply)


HOSTILE = [
    b"\n\n\r\n \n",
    b"\xff\xfe\xfd\n",
    b"\xc3\x28\n",
    b'{"jsonrpc":"2.0","method":"daemon.status","id":"\\udc00"}\n',
    b'{"jsonrpc":"2.0","method":"memory.recall","params":{"query":Infinity},"id":1}\n',
    b'{"jsonrpc":"2.0","method":"memory.recall","params":{"limit":1e999},"id":2}\n',
    b'{"jsonrpc":"2.0","method":"memory.recall","params":{"limit":-0},"id":3}\n',
    b'{"jsonrpc":"2.0","method":"daemon.status","id":12345678901234567890123}\n',
    b'{"jsonrpc":"2.0","method":"' + b"m" * 100_000 + b'","id":4}\n',
    b'{"jsonrpc":"2.0","method":"daemon.status","params":' + json.dumps(nested(400)).encode()
    + b',"id":5}\n',
    b"[" + b",".join([b'{"jsonrpc":"2.0","method":"daemon.status","id":%d}' % i for i in range(500)])
    + b"]\n",
    b"[" + b" " * (MAX_FRAME - 2) + b"]\n",
    b"x" * (MAX_FRAME + 1) + b"\n",
    b"y" * (3 * MAX_FRAME),  # no newline yet: skipped as it streams
    b"\n" + request_line("daemon.status", {}, "after"),
]  # fmt: skip


def test_a_hostile_corpus_over_a_real_socket(daemon: Running) -> None:
    """Through the real socket, byte by byte for the small frames: the daemon answers
    everything, keeps its file descriptors, and logs no traceback."""
    with daemon.connect() as warm:
        warm.call("daemon.status")
    pid = daemon.call("daemon.status")["pid"]
    fds = steady_fds(pid)
    replies: list[Any] = []

    def read_all(conn: Conn) -> None:
        # Read while the frames go out: a client that only sends blocks its own replies.
        # Frames are answered as each is done, not in order: the last frame's answer
        # may come before the batch's (500 calls, one after another).
        after = batch = False
        while not (after and batch):
            reply = conn.read()
            replies.append(reply)
            after |= isinstance(reply, dict) and reply.get("id") == "after"
            batch |= isinstance(reply, list)

    with daemon.connect() as conn:
        reader = threading.Thread(target=read_all, args=(conn,), daemon=True)
        reader.start()
        for frame in HOSTILE:
            if len(frame) < 300:
                for byte in range(len(frame)):
                    conn.send_raw(frame[byte : byte + 1])
            else:
                conn.send_raw(frame)
        reader.join(timeout=30)
        assert not reader.is_alive(), f"no reply to the last frame or the batch; got {len(replies)}"
    for reply in replies:
        assert not problems(reply), (problems(reply), reply)
    codes = [r["error"]["code"] for r in replies if isinstance(r, dict) and "error" in r]
    assert codes.count(-32006) == 2  # the two oversized frames, once each
    assert -32700 in codes
    batch = next(r for r in replies if isinstance(r, list))
    assert len(batch) == 500
    assert daemon.call("daemon.status")["pid"] == pid
    assert fds_back_to(pid, fds) <= fds
    assert "Traceback" not in daemon.log.read_text()


def test_nesting_within_the_decoders_depth_is_answered(served: InProcess) -> None:
    """500 levels (params nested as deep as JSON allows before msgspec's recursion limit
    of about 1000) get a normal answer; deeper frames: see test_known_bugs."""
    exchange = served.exchange([request_line("daemon.status", nested(500), 1)])
    (reply,) = exchange.replies
    assert reply["error"]["code"] == -32602, reply


def test_the_frame_reader_is_linear() -> None:
    """Twice the bytes of tiny frames cost about twice the time (no quadratic buffer
    handling), fed in the connection's 64 KiB reads."""

    def feed(kib: int) -> float:
        data = b"{}\n\n" * (kib << 8)
        reader = FrameReader()
        started = time.perf_counter()
        for start in range(0, len(data), 1 << 16):
            for _ in reader.feed(data[start : start + (1 << 16)]):
                pass
        return time.perf_counter() - started

    feed(64)  # warm-up
    small, large = min(feed(256) for _ in range(2)), min(feed(1024) for _ in range(2))
    assert large < 4 * 3 * small, (small, large)
