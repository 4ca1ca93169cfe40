"""A text edited by the person in their editor (``$VISUAL``, ``$EDITOR``, else ``vi``)."""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile

from .session import UsageError


def edit(text: str) -> str:
    """``text`` as the person saved it in their editor.

    Raises:
        UsageError: the editor cannot run, or exits with an error (nothing is taken).
    """
    command = shlex.split(os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi")
    with tempfile.NamedTemporaryFile("w+", suffix=".md", encoding="utf-8") as file:
        file.write(text)
        file.flush()
        try:
            done = subprocess.run([*command, file.name], check=False)
        except OSError as exc:
            raise UsageError(f"cannot run the editor {command[0]!r}: {exc}") from None
        if done.returncode != 0:
            raise UsageError(f"the editor exited with {done.returncode}: nothing was accepted")
        with open(file.name, encoding="utf-8") as saved:  # editors often replace the file
            edited = saved.read()
    # Editors end the last line; a text that did not end one is unchanged by that.
    return edited if text.endswith("\n") else edited.removesuffix("\n")
