"""Writing a correction in the person's own editor (``$VISUAL``, ``$EDITOR``, else ``vi``).

The text goes to a private temporary file (mode 0600) that is removed afterwards;
the browser gives the terminal to the editor while it runs.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from textual.app import App, SuspendNotSupported


def command() -> list[str]:
    """The editor to run, split like a shell would split it."""
    chosen = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    return shlex.split(chosen) or ["vi"]


def edit(app: App[Any], text: str) -> str | None:
    """``text`` as the person left it in their editor; None if the editor failed or
    could not be started (the app says why)."""
    fd, name = tempfile.mkstemp(prefix="hikmah-correction-", suffix=".txt")
    path = Path(name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(text if text.endswith("\n") else text + "\n")
        argv = [*command(), str(path)]
        try:
            with app.suspend():
                done = subprocess.run(argv, check=False)
        except SuspendNotSupported:
            app.notify(
                "This terminal cannot hand over to an editor; edit inline.", severity="warning"
            )
            return None
        except OSError as exc:
            app.notify(f"Cannot start {argv[0]}: {exc.strerror}", severity="error")
            return None
        if done.returncode != 0:
            app.notify(
                f"{argv[0]} exited {done.returncode}; the text was not taken.", severity="warning"
            )
            return None
        return path.read_text(encoding="utf-8").strip()
    finally:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
