"""The semantic channel in the daemon: its model and vectors brought up, folded and saved,
all off the event loop, while the daemon serves.

The socket accepts before any of it starts, so start to READY does not wait for
the model (0.3 s) or the vectors (about 1 s to read at 1M traces, minutes to
build). Until they are ready, recall runs on the lexical channel alone and
``daemon.status`` says so (``semantic.state``):

- ``off``: ``[semantic] enabled = false``;
- ``loading``: the model and the vector file are being read;
- ``building``: the vectors are being made from the store (no usable file, a
  model change, ``--rebuild-index``);
- ``ready``: recall uses them and every write keeps them;
- ``unavailable``: the model cannot be loaded (``error`` says why).

Loading and building embed in a worker thread while writes go on; the last
catch-up and the switch to ``ready`` run in the writer's turn
(:meth:`~hikmahd.writer.Writer.exclusive`), so no commit slips between. Once
ready, recent vectors move into the HNSW graph and the file is saved only when
no write came for a moment (a bulk import is never slowed by either), and at
the latest every few minutes; under the vault a purge saves at once (the store
does that itself).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, Literal

import trio

from hikmah.embedding import EmbedderUnavailable, load_embedder
from hikmah.policy import KernelPolicy
from hikmah.rules import Applied, Outcome
from hikmah.semantic import SemanticIndex, vectors_path
from hikmah.store import Store

from .scheduling import Offload
from .writer import Writer

log = logging.getLogger(__name__)

State = Literal["off", "loading", "building", "ready", "unavailable"]
TICK_S = 1.0  # how often the channel looks at what it has to do
QUIET_S = 2.0  # no write for this long: folding and saving may run
SAVE_EVERY_S = 300.0  # and changed vectors are saved at least this often


class Semantics:
    """Keeps the store's vectors as the policy asks. Start :meth:`run` in a nursery."""

    def __init__(
        self,
        store: Store,
        writer: Writer,
        policy: Callable[[], KernelPolicy],
        offload: Offload,
    ) -> None:
        self.store, self.writer, self.policy, self.offload = store, writer, policy, offload
        # Until run() starts (after the promise queue is loaded), an enabled channel is
        # about to load.
        self.state: State = "loading" if policy().semantic.enabled else "off"
        self.error: str | None = None
        self._model: str | None = None  # the model the attached vectors come from
        self._unavailable: str | None = None  # a model that failed to load: not retried
        self._last_write = -float("inf")
        self._last_save = 0.0
        self._wake = trio.Event()

    def on_commit(self, outcomes: Sequence[Outcome | Applied]) -> None:
        """A writer listener: remember when the last write came."""
        self._last_write = trio.current_time()

    def policy_changed(self) -> None:
        self._wake.set()

    def status(self) -> dict[str, Any]:
        """What ``daemon.status`` reports of the channel."""
        policy = self.policy().semantic
        out: dict[str, Any] = {
            "enabled": policy.enabled,
            "model": policy.model,
            "state": self.state,
            "error": self.error,
        }
        semantic = self.store.semantic
        if semantic is not None:
            held = semantic.status()
            out |= {"vectors": held.vectors, "graph": held.graph, "version": held.version}
        return out

    async def run(self) -> None:
        """Bring the channel up, keep it, and take it down, as the policy asks, until
        cancelled."""
        self._last_save = trio.current_time()
        while True:
            await self._settle()
            await self._maintain()
            with trio.move_on_after(TICK_S):
                await self._wake.wait()
            self._wake = trio.Event()

    async def _settle(self) -> None:
        policy = self.policy().semantic
        semantic = self.store.semantic
        if not policy.enabled or (semantic is not None and self._model != policy.model):
            if semantic is not None:
                await self.save()
                self.store.semantic = None
                self._model = None
                log.info("the semantic channel is off")
            self.state, self.error = "off", None
            if not policy.enabled:
                return
        if self._unavailable == policy.model:
            return
        try:
            if self.store.semantic is None:
                await self._open(policy.model, policy.ann_at)
            elif not self.store.semantic.ready:
                await self._bring_up(self.store.semantic)  # the store rebuilt its indexes
        except Exception as exc:
            # Derived data: the daemon serves on without it, and says why.
            log.exception("the semantic channel could not start; recall is lexical")
            self.store.semantic, self._model = None, None
            self.state, self.error, self._unavailable = "unavailable", str(exc), policy.model

    async def _open(self, model: str, ann_at: int) -> None:
        self.state, self.error = "loading", None
        try:
            embedder = await self.offload(lambda: load_embedder(model))
        except EmbedderUnavailable as exc:
            self.state, self.error, self._unavailable = "unavailable", str(exc), model
            log.warning("the semantic channel is unavailable, recall is lexical: %s", exc)
            return
        self._unavailable = None
        semantic = SemanticIndex(vectors_path(self.store.data_dir), embedder, ann_at=ann_at)
        self.store.semantic = semantic
        self._model = model
        await self._bring_up(semantic)

    async def _bring_up(self, semantic: SemanticIndex) -> None:
        store = self.store

        def prepare() -> None:
            with store.snapshot() as snapshot:
                semantic.prepare(snapshot, store.dbs.vault)

        def finish(_store: Store) -> None:
            with store.snapshot() as snapshot:
                semantic.finish(snapshot)

        self.state = "building" if semantic.status().state == "building" else "loading"
        began = trio.current_time()
        await self.offload(prepare)
        await self.writer.exclusive(finish)
        self.state = "ready"
        held = semantic.status()
        log.info(
            "semantic channel ready: %d vectors of %s %s in %.1f s",
            held.vectors,
            held.model,
            held.version,
            trio.current_time() - began,
        )

    async def _maintain(self) -> None:
        """Fold and save while no write comes."""
        semantic = self.store.semantic
        if semantic is None or not semantic.ready:
            return
        while semantic.wants_fold() and self._quiet():
            await self.offload(semantic.fold)
        now = trio.current_time()
        if semantic.changed and (self._quiet() or now - self._last_save > SAVE_EVERY_S):
            await self.save()

    def _quiet(self) -> bool:
        return trio.current_time() - self._last_write > QUIET_S

    async def save(self) -> None:
        """Write the vectors' file if they changed since the last save (also at a stop)."""
        semantic, store = self.store.semantic, self.store
        if semantic is None or not semantic.ready or not semantic.changed:
            return
        await self.offload(lambda: semantic.save(store.dbs.vault))
        self._last_save = trio.current_time()
