"""Hot reload of the policy file: a valid change applies at once, an invalid one is
reported and the policy in force stays."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import trio
import watchfiles

from hikmah.model.errors import PolicyError
from hikmah.model.policy import KernelPolicy, load_policy

log = logging.getLogger(__name__)
WATCH_TIMEOUT_MS = 250


class PolicyHolder:
    """The policy in force, where it came from, and why the last load failed."""

    def __init__(self, path: Path, *, vault_on: bool = False) -> None:
        self.path = path
        # Whether the store runs with the vault's keys: fixed for the process.
        self.vault_on = vault_on
        self.policy = KernelPolicy()
        self.error: str | None = None
        self.reload()

    def in_force(self) -> KernelPolicy:
        """The policy in force now (what the writer, recall and the timers ask for)."""
        return self.policy

    def reload(self) -> bool:
        """Load the file again; True when the policy in force changed."""
        try:
            loaded = load_policy(self.path)
            if loaded.vault.enabled != self.vault_on:
                # The keys are fetched when the store opens: a running daemon cannot
                # start or stop sealing, and must not claim to.
                now = "on" if self.vault_on else "off"
                raise PolicyError(
                    f"{self.path}: [vault] enabled = {str(loaded.vault.enabled).lower()} takes"
                    f" effect when hikmahd restarts (the vault is {now} in this process)"
                )
        except PolicyError as exc:
            self.error = str(exc)
            log.error("policy not applied, the previous one stays in force: %s", exc)
            return False
        self.error = None
        if loaded == self.policy:
            return False
        self.policy = loaded
        log.info("policy loaded from %s", self.path)
        return True

    async def watch(
        self,
        on_change: Callable[[], None] | None = None,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Reload whenever the file changes; runs until cancelled.

        The directory is watched, not the file, so that an editor replacing
        the file (write a temporary, rename) and a file created later are seen.
        """
        directory = self.path.parent
        directory.mkdir(parents=True, exist_ok=True)
        name = self.path.name

        def concerns_policy(_change: watchfiles.Change, path: str) -> bool:
            return Path(path).name == name

        task_status.started()
        first = True
        async for changes in watched(directory, concerns_policy, recursive=False):
            # The first time round the watch is in place: an edit made before it (since
            # the policy was loaded at start) is looked for once.
            if (changes or first) and self.reload() and on_change is not None:
                on_change()
            first = False


def watched(
    directory: Path, keep: Callable[[watchfiles.Change, str], bool], *, recursive: bool
) -> AsyncIterator[set[tuple[watchfiles.Change, str]]]:
    """The changes in ``directory`` that ``keep`` keeps, debounced, and an empty set at
    least every ``WATCH_TIMEOUT_MS`` (so that a watcher can look at what else changed).

    The watcher waits in a thread that cancellation cannot interrupt; the short
    timeout also bounds how long shutdown waits for it (5 s by default).
    """
    return watchfiles.awatch(
        directory,
        watch_filter=keep,
        debounce=200,
        step=20,
        rust_timeout=WATCH_TIMEOUT_MS,
        yield_on_timeout=True,
        recursive=recursive,
    )
