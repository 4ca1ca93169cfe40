"""The semantic channel in the daemon: its model and vectors brought up, kept up with the
store, folded and saved, all off the event loop, while the daemon serves.

The socket accepts before any of it starts, so start to READY waits for neither the
model nor the vectors. Until the vectors are read, recall runs on the lexical
channel alone; from then on it uses what is there while the rest is embedded in
the background, and ``daemon.status`` says so (``semantic.state``, ``behind``):

- ``off``: ``[semantic] enabled = false``;
- ``loading``: the model and the vector file are being read;
- ``building``: the vectors are being made from the store (no usable file, a
  model change, ``--rebuild-index``), recall using those made so far;
- ``ready``: every commit reaches the vectors (``behind`` of them still being
  embedded after a burst of writes, such as an import);
- ``unavailable``: no model can be loaded (``error`` says why).

When the policy's model cannot load (its package is missing, or its files are
not the pinned ones), WordLlama serves instead and ``fallback`` says why: a
degraded channel is never silent.

Writes never wait for the model: the store drops a rewritten document's old
vectors as it commits, and :meth:`Semantics.run` embeds what is behind on a
thread of its own at the lowest CPU priority (so writes and recalls keep the
CPU they need), a batch at a time, folds recent vectors into the HNSW graph (in
small slices while writes come, so that a recall never waits long for the
lock), and saves the file when no write came for a moment, and at the latest
every few minutes; under the vault a purge saves at once (the store does that
itself).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import msgspec
import trio

from hikmah.model.paths import model_cache_dir
from hikmah.model.policy import KernelPolicy
from hikmah.model.wire.service import SemanticChannel, SemanticState
from hikmah.rules.operations import Applied, Outcome
from hikmah.semantic.embedding import EmbedderUnavailable
from hikmah.semantic.models import load_model
from hikmah.semantic.store_vectors import SemanticIndex
from hikmah.semantic.vector_file import vectors_path
from hikmah.store.core import Store

from .scheduling import Offload

log = logging.getLogger(__name__)

TICK_S = 1.0  # how often the channel looks at what it has to do
QUIET_S = 2.0  # no write and no recall for this long: folding in large slices and saving run
SAVE_EVERY_S = 300.0  # and changed vectors are saved at least this often
BUSY_FOLD_SLICE = 16  # vectors folded per lock hold while writes come (a few ms)
FOLLOW_S = 1.0  # embedding in the background looks up at the policy this often
# While writes come, the follower lets them pass: it waits until none came for
# GATHER_S, but at most GATHER_MAX_S, and then embeds for a round (FOLLOW_S). A write is
# then not embedded while the next one is being made (that cost a lone client a quarter
# of its durable writes), and a bulk import, whose pages commit a tenth of a second
# apart, keeps the interpreter: embedding takes the GIL back after every text, so at
# every other second it cost a 100k import a fifth of its speed. The vectors cannot
# keep up with an import anyway; they catch up once it is done.
GATHER_S = 0.25
GATHER_MAX_S = 4.0
PROGRESS_S = 10.0  # a long catch-up says how far it got this often (in the log)


class Semantics:
    """Keeps the store's vectors as the policy asks. Start :meth:`run` in a nursery."""

    def __init__(
        self,
        store: Store,
        policy: Callable[[], KernelPolicy],
        offload: Offload,
        background: Offload,
    ) -> None:
        self.store, self.policy, self.offload = store, policy, offload
        # Embedding and folding: the CPU the daemon does not need (scheduling.IdleThread).
        self.background = background
        # Until run() starts (after the promise queue is loaded), an enabled channel is
        # about to load.
        self.state: SemanticState = "loading" if policy().semantic.enabled else "off"
        self.error: str | None = None
        self.fallback: str | None = None  # why another model serves than the policy's
        self._model: str | None = None  # the policy's model the attached vectors serve
        self._unavailable: str | None = None  # a model that failed to load: not retried
        self._last_write = -float("inf")
        self._last_recall = -float("inf")
        self._last_save = 0.0
        self._wake = trio.Event()
        self._progress: tuple[float, int] | None = None  # when, and how many were behind

    def on_commit(self, outcomes: Sequence[Outcome | Applied]) -> None:
        """A writer listener: remember when the last write came, and wake the follower."""
        self._last_write = trio.current_time()
        self._wake.set()

    def recalled(self) -> None:
        """A recall came: folding holds the lock its search needs in short slices for a
        while (a large one made recalls during a catch-up wait for it)."""
        self._last_recall = trio.current_time()

    def policy_changed(self) -> None:
        self._wake.set()

    def interrupt(self) -> None:
        """The daemon is stopping: embedding in progress ends within a slice, and what it
        had chosen stays behind for the next start."""
        if self.store.semantic is not None:
            self.store.semantic.interrupt()

    def status(self) -> SemanticChannel:
        """What ``daemon.status`` reports of the channel."""
        policy = self.policy().semantic
        channel = SemanticChannel(
            enabled=policy.enabled,
            model=policy.model,
            state=self.state,
            error=self.error,
            fallback=self.fallback,
        )
        semantic = self.store.semantic
        if semantic is None:
            return channel
        held = semantic.status()
        return msgspec.structs.replace(
            channel,
            serving=semantic.model,
            version=held.version,
            vectors=held.vectors,
            graph=held.graph,
            documents=held.documents,
            behind=held.behind,
        )

    async def run(self) -> None:
        """Bring the channel up, keep it, and take it down, as the policy asks, until
        cancelled."""
        self._last_save = trio.current_time()
        while True:
            self._wake = trio.Event()
            await self._settle()
            behind = await self._follow()
            await self._maintain()
            if not behind:
                with trio.move_on_after(TICK_S):
                    await self._wake.wait()

    async def _settle(self) -> None:
        policy = self.policy().semantic
        semantic = self.store.semantic
        if not policy.enabled or (semantic is not None and self._model != policy.model):
            if semantic is not None:
                await self.save()
                self.store.semantic = None
                self._model = None
                log.info("the semantic channel is off")
            self.state, self.error, self.fallback = "off", None, None
            if not policy.enabled:
                return
        if self._unavailable == policy.model:
            return
        try:
            if self.store.semantic is None:
                await self._open(policy.model, policy.ann_at)
            elif not self.store.semantic.serving:
                await self._bring_up(self.store.semantic)  # the store rebuilt its indexes
        except Exception as exc:
            # Derived data: the daemon serves on without it, and says why.
            log.exception("the semantic channel could not start; recall is lexical")
            self.store.semantic, self._model = None, None
            self.state, self.error, self._unavailable = "unavailable", str(exc), policy.model

    async def _open(self, model: str, ann_at: int) -> None:
        self.state, self.error, self.fallback = "loading", None, None
        try:
            loaded = await self.offload(lambda: load_model(model, model_cache_dir()))
        except EmbedderUnavailable as exc:
            self.state, self.error, self._unavailable = "unavailable", str(exc), model
            log.warning("the semantic channel is unavailable, recall is lexical: %s", exc)
            return
        self._unavailable = None
        if loaded.fallback_from is not None:
            self.fallback = f"{loaded.fallback_from}: {loaded.reason}"
            log.warning(
                "%s serves the semantic channel: %s cannot load (%s)",
                loaded.name,
                loaded.fallback_from,
                loaded.reason,
            )
        semantic = SemanticIndex(
            vectors_path(self.store.data_dir), loaded.embedder, model=loaded.name, ann_at=ann_at
        )
        # Attached first: every commit from now on reaches it, before the file is read
        # or after.
        self.store.semantic = semantic
        self._model = model
        await self._bring_up(semantic)

    async def _bring_up(self, semantic: SemanticIndex) -> None:
        store = self.store

        def bring_up() -> None:
            with store.snapshot() as snapshot:
                semantic.open(snapshot, store.dbs.vault)

        self.state = "loading"
        began = trio.current_time()
        await self.offload(bring_up)
        held = semantic.status()
        self.state = held.state
        log.info(
            "semantic channel serving: %d vectors of %s %s in %.1f s, %d documents behind",
            held.vectors,
            held.model,
            held.version,
            trio.current_time() - began,
            held.behind,
        )

    async def _follow(self) -> bool:
        """Embed what is behind, a batch at a time, folding as the graph needs, for up to
        :data:`FOLLOW_S` (then the policy is looked at again); whether any is left."""
        semantic = self.store.semantic
        if semantic is None or not semantic.serving:
            return False
        store = self.store
        await self._gathered()
        until = trio.current_time() + FOLLOW_S
        while semantic.behind and trio.current_time() < until:
            await self.background(lambda: semantic.follow(store.snapshot))
            # Fold all that the graph takes, a slice at a time (the lock is let go between
            # them): what stays recent is searched exactly by every recall, which costs
            # tens of milliseconds at tens of thousands of vectors (a catch-up after an
            # import embeds a batch a round; one slice a round let them pile up).
            while semantic.wants_fold():
                await self._fold(semantic, None if self._quiet() else BUSY_FOLD_SLICE)
        self.state = semantic.status().state
        self._report(semantic.behind)
        return bool(semantic.behind)

    async def _gathered(self) -> None:
        """Wait while writes are coming, up to :data:`GATHER_MAX_S`."""
        until = trio.current_time() + GATHER_MAX_S
        while (quiet := self._last_write + GATHER_S) > trio.current_time() < until:
            await trio.sleep_until(min(quiet, until))

    def _report(self, behind: int) -> None:
        """Log how a long catch-up goes (an import, a model change): how many are left,
        at what rate, and about how long it will take."""
        now = trio.current_time()
        if not behind:
            if self._progress is not None:
                log.info("the vectors have caught up")
            self._progress = None
            return
        if self._progress is None:
            self._progress = (now, behind)
            return
        since, before = self._progress
        if now - since < PROGRESS_S:
            return
        rate = (before - behind) / (now - since)
        if rate > 0:
            pace = f"{rate:.0f} a second, about {behind / rate / 60:.0f} min left"
        else:
            pace = "writes coming faster than they are embedded"
        log.info("embedding in the background: %d traces behind, %s", behind, pace)
        self._progress = (now, behind)

    async def _fold(self, semantic: SemanticIndex, slice_size: int | None) -> None:
        if slice_size is None:
            await self.background(semantic.fold)
        else:
            await self.background(lambda: semantic.fold(slice_size=slice_size))

    async def _maintain(self) -> None:
        """Fold and save while no write comes."""
        semantic = self.store.semantic
        if semantic is None or not semantic.serving:
            return
        while semantic.wants_fold() and self._quiet():
            await self._fold(semantic, None)
        now = trio.current_time()
        if semantic.changed and (self._quiet() or now - self._last_save > SAVE_EVERY_S):
            await self.save()

    def _quiet(self) -> bool:
        """No write and no recall came for :data:`QUIET_S`."""
        return trio.current_time() - max(self._last_write, self._last_recall) > QUIET_S

    async def save(self) -> None:
        """Write the vectors' file if they changed since the last save (also at a stop)."""
        semantic, store = self.store.semantic, self.store
        if semantic is None or not semantic.serving or not semantic.changed:
            return
        await self.offload(lambda: semantic.save(store.dbs.vault))
        self._last_save = trio.current_time()
