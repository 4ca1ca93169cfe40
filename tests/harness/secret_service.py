"""A real Secret Service for tests: GNOME Keyring on a private D-Bus session bus.

``gnome-keyring-daemon --components=secrets`` runs with its keyring files in
the test's temp dir and is unlocked by a password on its stdin; that is the
backend ``keyring`` picks on a Linux desktop, so the tests exercise the same
D-Bus calls and failures as a person's session, with nothing touching the
user's own keyring. Both daemons are killed and reaped by the fixture.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from contextlib import closing
from pathlib import Path

import pytest
import secretstorage
from jeepney.io.blocking import open_dbus_connection

START_TIMEOUT_S = 10.0
PASSWORD = b"test keyring password"

needs_secret_service = pytest.mark.skipif(
    shutil.which("dbus-daemon") is None or shutil.which("gnome-keyring-daemon") is None,
    reason="needs dbus-daemon and gnome-keyring-daemon (.ci/run installs dbus and gnome-keyring)",
)


# A session bus without service directories: with the standard ones, the first
# call to org.freedesktop.secrets could activate a second, locked
# gnome-keyring-daemon (from /usr/share/dbus-1/services) that wins the name
# over ours. (Its <listen> is required and overridden by --address.)
BUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:tmpdir=/tmp</listen>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"""


class SecretServiceSession:
    """A private session bus with GNOME Keyring's Secret Service on it."""

    def __init__(self, root: Path) -> None:
        root.mkdir(mode=0o700, exist_ok=True)
        self.root = root
        self.home = root / "home"
        self.runtime = root / "run"
        self.home.mkdir()
        self.runtime.mkdir(mode=0o700)
        self.log = root / "gnome-keyring.log"
        self.bus: subprocess.Popen[str] | None = None
        self.keyring_daemon: subprocess.Popen[bytes] | None = None
        self.address = ""

    def start(self) -> None:
        config = self.root / "bus.conf"
        config.write_text(BUS_CONFIG)
        self.bus = subprocess.Popen(
            [
                "dbus-daemon",
                f"--config-file={config}",
                "--nofork",
                "--print-address",
                f"--address=unix:path={self.root}/bus",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )
        assert self.bus.stdout is not None
        self.address = self.bus.stdout.readline().strip()
        assert self.address.startswith("unix:"), self.address
        self.start_keyring()

    def start_keyring(self) -> None:
        env = {
            **os.environ,
            "DBUS_SESSION_BUS_ADDRESS": self.address,
            "HOME": str(self.home),
            "XDG_DATA_HOME": str(self.home / "share"),
            "XDG_RUNTIME_DIR": str(self.runtime),
        }
        with self.log.open("ab") as log:
            self.keyring_daemon = subprocess.Popen(
                ["gnome-keyring-daemon", "--foreground", "--unlock", "--components=secrets"],
                stdin=subprocess.PIPE,
                stdout=log,
                stderr=log,
                env=env,
                start_new_session=True,
            )
        assert self.keyring_daemon.stdin is not None
        self.keyring_daemon.stdin.write(PASSWORD)
        self.keyring_daemon.stdin.close()
        self.wait_until_ready()

    def wait_until_ready(self) -> None:
        """Until the unlocked login collection is the default one.

        Asking for the default collection before it exists would make the
        service try to create one, behind a prompt nobody answers (10 s).
        """
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            assert self.keyring_daemon is not None
            if self.keyring_daemon.poll() is not None:
                raise RuntimeError(f"gnome-keyring-daemon exited:\n{self.log.read_text()}")
            try:
                with closing(open_dbus_connection(bus=self.address)) as connection:
                    collection = secretstorage.get_collection_by_alias(connection, "default")
                    if not collection.is_locked():
                        return
            except secretstorage.exceptions.SecretStorageException:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"no unlocked Secret Service collection:\n{self.log.read_text()}"
                )
            time.sleep(0.02)

    def stop_keyring(self) -> None:
        if self.keyring_daemon is not None:
            self.keyring_daemon.terminate()
            self.keyring_daemon.wait(timeout=10)
            self.keyring_daemon = None

    def stop(self) -> None:
        self.stop_keyring()
        if self.bus is not None:
            self.bus.terminate()
            self.bus.wait(timeout=10)
            assert self.bus.stdout is not None
            self.bus.stdout.close()
            self.bus = None
