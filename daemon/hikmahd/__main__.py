"""``hikmahd``: the Hikmah memory daemon, in the foreground, logging to stderr."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from hikmah import __version__
from hikmah.model import paths
from hikmah.model.errors import HikmahError
from hikmah.store.core import MAX_MAP_SIZE

from .backup import restore, summary
from .daemon import Config, DaemonError, DataDirLock, run
from .rebuild import rebuild_index
from .recovery import reset_passphrase
from .scheduling import wall_ms
from .vaulting import vault_for

EPILOG = """\
paths (flag, then environment, then XDG default):
  socket    --socket,   $HIKMAH_SOCKET,   $XDG_RUNTIME_DIR/hikmah/hikmahd.sock
  data      --data-dir, $HIKMAH_DATA_DIR, $XDG_DATA_HOME/hikmah
  policy    --policy,   $HIKMAH_POLICY,   $XDG_CONFIG_HOME/hikmah/policy.toml

The daemon is ready when its socket accepts connections (under systemd it also
sends READY=1). SIGTERM or SIGINT stop it after committing queued writes;
SIGHUP reloads the policy (it is also reloaded whenever the file changes).
"""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="hikmahd",
        description="Hikmah's memory daemon: durable, auditable memory over a Unix socket.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--socket", metavar="PATH", help="Unix socket to serve")
    p.add_argument("--data-dir", metavar="DIR", help="where the LMDB store and head live")
    p.add_argument("--policy", metavar="FILE", help="policy file (TOML); need not exist")
    instead = p.add_mutually_exclusive_group()
    instead.add_argument(
        "--rebuild-index",
        action="store_true",
        help="recreate every derived index from the ledger, then exit (the semantic"
        " channel's vectors are made again in the background when hikmahd next serves)",
    )
    instead.add_argument(
        "--restore",
        metavar="BACKUP",
        help="check the backup directory BACKUP (made by `hikmah backup`), then install it"
        " as the data directory, moving the current one aside; exit without serving",
    )
    instead.add_argument(
        "--reset-passphrase",
        action="store_true",
        help="turn person presence off when its passphrase is forgotten (asks you to confirm"
        " on the terminal; leaves a 'reset' record in the ledger that hikmah status"
        " announces), then exit; the daemon must be stopped",
    )
    p.add_argument(
        "--max-store-mib",
        type=int,
        metavar="N",
        default=MAX_MAP_SIZE >> 20,
        help="largest the LMDB store may grow, in MiB (it grows by doubling as needed;"
        " past this, writes are refused with store_full and reads go on)",
    )
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    p.add_argument(
        "--unsafe-no-sync",
        action="store_true",
        help=argparse.SUPPRESS,  # benchmarks only: commits are not synced to disk
    )
    p.add_argument("--version", action="version", version=f"hikmahd {__version__}")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(),
        format="%(asctime)s hikmahd[%(process)d] %(levelname)s %(name)s: %(message)s",
    )
    # It says "1 change detected" at info for every change of the watched folders.
    logging.getLogger("watchfiles").setLevel(max(logging.WARNING, logging.root.level))
    config = Config(
        socket_path=paths.socket_path(args.socket),
        data_dir=paths.data_dir(args.data_dir),
        policy_path=paths.policy_path(args.policy),
        durable=not args.unsafe_no_sync,
        max_store_bytes=args.max_store_mib << 20,
    )
    try:
        vault = vault_for(config.policy_path)
        keys = None if vault is None else vault.load
        if args.rebuild_index:
            with DataDirLock(config.data_dir):
                rebuild_index(config.data_dir, vault=keys)
            return 0
        if args.reset_passphrase:
            with DataDirLock(config.data_dir):
                print(reset_passphrase(config.data_dir, wall_ms(), vault=keys))
            return 0
        if args.restore:
            with DataDirLock(config.data_dir):
                restored = restore(config.data_dir, Path(args.restore), wall_ms(), vault=keys)
            print(summary(restored))
            return 0
        run(config, vault)
    except (DaemonError, HikmahError) as exc:
        print(f"hikmahd: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
