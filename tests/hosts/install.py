"""The agent hosts the real-host tests drive, installed from the npm registry as people
install them, at the versions pinned here, into a cache directory.

    python3 -m tests.hosts.install [DIR]

``DIR`` defaults to ``$HIKMAH_TEST_HOSTS``, else ``~/.cache/hikmah/test-hosts``. Each
package gets a prefix of its own (``DIR/<name>-<version>``), with npm's download cache
beside them (``DIR/npm-cache``), so a second run installs nothing and a version bump
installs only that package. Standard library only: CI runs it before the virtualenv
exists. docs/agents.md lists the versions known to work; bump them here.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Host:
    package: str
    version: str
    command: str  # the executable npm links into node_modules/.bin

    def prefix(self, cache: Path) -> Path:
        return cache / f"{self.package.rsplit('/', 1)[-1]}-{self.version}"

    def executable(self, cache: Path) -> Path:
        return self.prefix(cache) / "node_modules" / ".bin" / self.command


CLAUDE_CODE = Host("@anthropic-ai/claude-code", "2.1.332", "claude")
CODEX = Host("@openai/codex", "0.171.0", "codex")
GEMINI_CLI = Host("@google/gemini-cli", "0.61.0", "gemini")
# Its postinstall script links the platform's binary over a stub: npm must run scripts.
OPENCODE = Host("opencode-ai", "1.18.33", "opencode")
HOSTS = (CLAUDE_CODE, CODEX, GEMINI_CLI, OPENCODE)
INSTALL_TIMEOUT_S = 600


def cache_dir() -> Path:
    named = os.environ.get("HIKMAH_TEST_HOSTS")
    if named:
        return Path(named).absolute()
    return Path.home() / ".cache" / "hikmah" / "test-hosts"


def install(host: Host, cache: Path) -> Path:
    """The host's executable, installed first if it is not there yet.

    Raises:
        RuntimeError: npm is missing or the install failed (the message has npm's output).
    """
    executable = host.executable(cache)
    if executable.exists():
        return executable
    command = [
        "npm", "install", "--prefix", str(host.prefix(cache)), "--cache", str(cache / "npm-cache"),
        "--no-audit", "--no-fund", "--no-save", "--loglevel", "error",
        "--ignore-scripts=false",  # OpenCode's postinstall, even where an npmrc turns them off
        f"{host.package}@{host.version}",
    ]  # fmt: skip
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RuntimeError(f"cannot run {' '.join(command)}: {exc}") from None
    if done.returncode != 0 or not executable.exists():
        output = (done.stdout + done.stderr).strip()[-2000:]
        raise RuntimeError(f"{' '.join(command)} failed (exit {done.returncode}): {output}")
    return executable


def main(argv: list[str]) -> int:
    cache = Path(argv[0]).absolute() if argv else cache_dir()
    for host in HOSTS:
        try:
            path = install(host, cache)
        except RuntimeError as exc:
            print(exc, file=sys.stderr)
            return 1
        print(f"{host.package}@{host.version}: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
