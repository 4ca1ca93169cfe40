"""The ``hikmah`` commands that run their own course: several requests, files, another program.

Each takes the parsed arguments and returns the exit code; the table of
:mod:`hikmah_cli.commands` names them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hikmah.model import paths
from hikmah.model.display import counted, visible
from hikmah_client.connection import started_at

from .render_transfer import (
    Progress,
    backed_up,
    chain_break,
    imported,
    imported_source,
    ingested,
    refused_line,
)
from .session import INTERNAL, OK, REFUSED, UNAVAILABLE, USAGE, Exit, Session, UsageError, call

if TYPE_CHECKING:  # the replies' types, for mypy only: the CLI reads replies as Reply
    from hikmah.model.wire.replay import IngestResult
    from hikmah.model.wire.service import BackupResult, DaemonStatusResult, StopResult

# How long `hikmah stop` waits for the daemon to exit: its last batch of writes, saving
# the vectors (seconds at a million traces), up to 2 s for other connections' replies.
STOP_WAIT_S = 30.0


def _executable(name: str) -> str:
    """The installed ``name`` script: beside this Python (a virtualenv), else on PATH."""
    import shutil  # noqa: PLC0415 -- only setup needs it

    beside = Path(sys.executable).with_name(name)
    found = str(beside) if beside.exists() else shutil.which(name)
    if found is None:
        raise UsageError(f"cannot find the {name} command; install hikmah with `pip install .`")
    return str(Path(found).absolute())


def setup(args: argparse.Namespace) -> int:
    from . import setup as configure  # noqa: PLC0415 -- a rare command; keep the hot path lean

    hikmah = _executable("hikmah")
    if args.host == "systemd" and args.no_mcp:
        raise UsageError("--no-mcp is for an agent host, not systemd")
    try:
        if args.host == "systemd":
            lines = configure.setup_systemd(
                paths.systemd_user_dir(), home=Path.home(), remove=args.remove,
                hikmahd=str(Path(_executable("hikmahd")).resolve()),
            )  # fmt: skip
        else:
            agent = hikmah if args.no_mcp or args.remove else _executable("hikmah-agent")
            lines = configure.setup(
                args.host, home=Path.home(), remove=args.remove, mcp=not args.no_mcp,
                hikmah=hikmah, hikmah_agent=agent,
            )  # fmt: skip
    except (configure.SetupError, OSError) as exc:
        print(f"hikmah setup: {exc}", file=sys.stderr)
        return INTERNAL
    print("\n".join(lines))
    if args.host == "systemd":
        print(_systemd_next(hikmah, args.remove))
    elif not args.remove:
        print("\n".join(configure.next_steps(args.host, home=Path.home())))
        print(
            "Recommended: set a passphrase with `hikmah passphrase set` (if you have not):"
            " an agent can then never pass itself off as you, even by leaving its session"
            " (docs/security.md, 'Person presence')."
        )
    return OK


def _systemd_next(hikmah: str, removed: bool) -> str:
    """What the person runs next: setup never runs systemctl itself."""
    import shlex  # noqa: PLC0415 -- only setup systemd quotes a command

    if removed:
        return "Then: systemctl --user daemon-reload (the CLI starts hikmahd itself again)"
    lines = [
        "Then, in this order (a daemon the CLI started holds the socket's path: stop it"
        " first, and enable the socket before anything starts another):",
        "  systemctl --user daemon-reload",
        f"  {shlex.quote(hikmah)} stop && systemctl --user enable --now hikmahd.socket",
        "  systemctl --user try-restart hikmahd.service   # one that runs takes the new unit",
    ]
    moved = [name for name in ("HIKMAH_SOCKET", "HIKMAH_DATA_DIR", "HIKMAH_POLICY")
             if os.environ.get(name)]  # fmt: skip
    if moved:
        lines.append(
            f"Note: {', '.join(moved)} set here is not seen by systemd's units, which use"
            " the default paths; a drop-in (systemctl --user edit hikmahd.service) can set"
            " them."
        )
    return "\n".join(lines)


def passphrase(args: argparse.Namespace) -> int:
    from . import presence  # noqa: PLC0415 -- a rare command; keep the hot path lean

    return presence.passphrase(args)


def presence(args: argparse.Namespace) -> int:
    from . import presence as prove  # noqa: PLC0415 -- a rare command

    return prove.presence(args)


def writeback(args: argparse.Namespace) -> int:
    from . import writeback as block  # noqa: PLC0415 -- a rare command; keep the hot path lean

    target = Path(args.to)
    scope = args.scope or paths.project_scope(target.absolute().parent)
    params = {"scope": scope, "verified_only": True, "within_hours": 0, "limit": 500}
    traces = [entry["trace"] for entry in call(args, "memory.context", params)["standing"]]
    label = "global" if scope == "global" else f"{scope} and global"
    try:
        done = block.writeback(target, traces, scope_label=label, force=args.force)
    except block.HandEdited as exc:
        print(f"hikmah writeback: {exc}", file=sys.stderr)
        return REFUSED
    except (block.MalformedBlock, OSError, UnicodeDecodeError) as exc:
        print(f"hikmah writeback: {exc}", file=sys.stderr)
        return INTERNAL
    if args.json:
        print(json.dumps({"path": str(target), "result": done, "traces": len(traces)}))
    else:
        print(f"{done} {target}: {len(traces)} verified trace(s) of {label}")
    return OK


def ingest(args: argparse.Namespace) -> int:
    reports: list[IngestResult] = []
    failed = 0
    for number, name in enumerate(args.files, 1):
        try:
            report: IngestResult = call(args, "replay.ingest", {"path": os.path.abspath(name)})
        except Exit as exc:
            if exc.code == UNAVAILABLE:
                return UNAVAILABLE
            failed += 1  # the reason is on stderr; go on with the next file
            continue
        reports.append(report)
        if not args.json:
            print(visible(f"[{number}/{len(args.files)}] {ingested(report)}"), flush=True)
    if args.json:
        print(json.dumps({"files": reports}, ensure_ascii=False))
    elif reports:
        print("rules you stated are proposed by: hikmah consolidate")
    # As an import exits: a file that cannot be read first, then messages refused.
    if failed:
        return USAGE
    return REFUSED if any(report.refused for report in reports) else OK


def export(args: argparse.Namespace) -> int:
    from . import transfer  # noqa: PLC0415 -- only export and import use it

    chunks: list[str] = []
    with Session(args) as session:
        status: DaemonStatusResult = session.call("daemon.status", {})
        counts = status.counts
        total = counts["active"] + counts["fulfilled"]
        total += counts["superseded"] if args.include_superseded else 0
        progress = Progress("exported", total, "traces")
        count = 0
        pages = transfer.export_pages(
            session.call, include_superseded=args.include_superseded, as_of=args.as_of
        )
        for page in pages:
            text = "".join(json.dumps(t, ensure_ascii=False) + "\n" for t in page)
            if args.output:
                chunks.append(text)
            else:
                try:
                    sys.stdout.write(text)
                except BrokenPipeError:  # `hikmah export | head`: the reader has enough
                    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
                    return OK
            count += len(page)
            progress.update(count)
    progress.end()
    if args.output:
        from hikmah.model.durable import write_atomic  # noqa: PLC0415 -- only export --output writes

        try:
            write_atomic(Path(args.output), "".join(chunks).encode(), 0o600)
        except OSError as exc:
            print(f"hikmah export: cannot write {args.output}: {exc.strerror}", file=sys.stderr)
            return INTERNAL
        if args.json:
            print(json.dumps({"path": os.path.abspath(args.output), "traces": count}))
        else:
            print(f"exported {counted(count, 'trace')} to {args.output}")
    return OK


def import_(args: argparse.Namespace) -> int:
    from . import transfer  # noqa: PLC0415 -- only export and import use it

    if args.source is not None:
        return _import_source(args)
    if args.dry_run or args.project:
        flag = "--dry-run" if args.dry_run else "--project"
        print(f"hikmah import: {flag} is for --from SOURCE", file=sys.stderr)
        return USAGE
    try:
        data = Path(args.file).read_bytes()
    except OSError as exc:
        print(f"hikmah import: cannot read {args.file}: {exc.strerror or exc}", file=sys.stderr)
        return USAGE
    rows = transfer.rows_of(data)
    ledger = transfer.is_ledger(rows)
    if not ledger and (args.force_broken_chain or args.expect_head):
        print(
            "hikmah import: --force-broken-chain and --expect-head are for reference ledgers;"
            f" {args.file} holds traces",
            file=sys.stderr,
        )
        return USAGE
    report = _import_ledger(args, rows) if ledger else _import_traces(args, rows)
    report = {"file": os.path.abspath(args.file), **report}
    if args.json:
        print(json.dumps(report, ensure_ascii=False))
    else:
        for refused in report["refused"]:
            print(visible(f"hikmah import: {refused_line(refused)}"), file=sys.stderr)
        print(visible(imported(report)))
    return REFUSED if report["refused"] or report.get("break") else OK


def _import_source(args: argparse.Namespace) -> int:
    from . import transfer  # noqa: PLC0415 -- only export and import use it

    if args.force_broken_chain or args.expect_head:
        print(
            "hikmah import: --force-broken-chain and --expect-head are for ledgers", file=sys.stderr
        )
        return USAGE
    projects = {}
    for given in args.project:
        name, _, folder = given.partition("=")
        if not name or not folder:
            print(f"hikmah import: --project takes NAME=DIR, not {given!r}", file=sys.stderr)
            return USAGE
        projects[name] = os.path.abspath(os.path.expanduser(folder))
    params = {
        "source": args.source,
        "path": os.path.abspath(os.path.expanduser(args.file)),
        "dry_run": args.dry_run,
        "projects": projects,
    }
    progress: Progress | None = None

    def shown(done: int, total: int) -> None:
        nonlocal progress
        if progress is None:
            progress = Progress("checked" if args.dry_run else "imported", total, "records")
        progress.update(done)

    with Session(args) as session:
        report = transfer.import_source(session.call, params, shown)
    if progress is not None:
        progress.end()
    if args.json:
        print(json.dumps(report, ensure_ascii=False))
    else:
        for refused in report["refused"]:
            line = f"hikmah import: {refused['locator']} refused: {refused['reason']}"
            print(visible(line), file=sys.stderr)
        print(visible(imported_source(report)))
    return REFUSED if report["refused"] else OK


def _import_traces(args: argparse.Namespace, rows: list[tuple[int, bytes]]) -> dict[str, Any]:
    from . import transfer  # noqa: PLC0415 -- only export and import use it

    progress = Progress("imported", len(rows), "lines")
    with Session(args) as session:
        report = transfer.import_traces(session, rows, progress.update)
    progress.end()
    return report


def _import_ledger(args: argparse.Namespace, rows: list[tuple[int, bytes]]) -> dict[str, Any]:
    from hikmah.model.errors import InvalidInput  # noqa: PLC0415 -- only import uses these
    from hikmah.model.headtext import parse_head  # noqa: PLC0415

    from . import transfer  # noqa: PLC0415

    if args.expect_head is not None:
        try:
            parse_head(args.expect_head)
        except InvalidInput:
            message = "--expect-head must be SEQ:HASH, as verify-ledger prints it"
            print(f"hikmah import: {message}", file=sys.stderr)
            raise Exit(USAGE) from None
    with Session(args) as session:
        progress = Progress("verified", len(rows), "records")
        report, records = transfer.verify_ledger(
            session.call, rows, args.expect_head, progress.update
        )
        progress.end()
        broken = report["break"]
        if broken is not None and not args.force_broken_chain:
            print(
                f"hikmah import: {chain_break(broken)}; nothing was imported. Rerun with"
                f" --force-broken-chain to import the {report['verified']} records before the"
                " break.",
                file=sys.stderr,
            )
            return report
        progress = Progress("imported", report["verified"], "records")
        report = transfer.import_ledger(session.call, report, records, progress.update)
        progress.end()
    return report


def backup(args: argparse.Namespace) -> int:
    target = os.path.abspath(args.dir)
    # A large store takes a while to copy: no reply timeout.
    with Session(args, timeout=None) as session:
        result: BackupResult = session.call("daemon.backup", {"dir": target})
    print(json.dumps(result) if args.json else backed_up(result))
    return OK


def stop(args: argparse.Namespace) -> int:
    """Stop the daemon on this socket and wait until its process is gone; exit 0 when
    none runs (the goal, no daemon, holds), as ``systemctl stop`` of a stopped unit."""
    from hikmah_client.connection import NotRunning  # noqa: PLC0415 -- a rare command

    from . import presence  # noqa: PLC0415

    try:
        session = Session(args, start=False)
    except NotRunning:
        socket = paths.socket_path(args.socket)
        print(json.dumps({"was_running": False}) if args.json else f"no hikmahd runs at {socket}")
        return OK
    with session:
        presence.ensure(session)
        result: StopResult = session.call("daemon.stop", {})
    pid = result.pid
    if not _exits(pid, STOP_WAIT_S):
        print(
            f"hikmah stop: hikmahd (pid {pid}) was asked to stop and still runs after"
            f" {STOP_WAIT_S:.0f} s; its log says why",
            file=sys.stderr,
        )
        return INTERNAL
    if args.json:
        stopped = {"was_running": True, "pid": pid, "socket_activated": result.socket_activated}
        print(json.dumps(stopped))
        return OK
    print(f"hikmahd stopped (pid {pid})")
    if result.socket_activated:
        print(
            "systemd's socket unit still listens and starts it again on the next call; to keep"
            " it stopped: systemctl --user stop hikmahd.socket hikmahd.service"
        )
    return OK


def _exits(pid: int, timeout: float) -> bool:
    """Whether process ``pid`` exits within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    started = started_at(pid)
    while started is not None and started_at(pid) == started:
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


def evaluate(args: argparse.Namespace) -> int:
    """Run the harness in a process of its own: the CLI never loads the store itself."""
    argv = [sys.executable, "-m", "hikmah.evaluation.harness", "--k", str(args.k)]
    argv += [args.cases] if args.cases else []
    if args.longmemeval:
        argv += ["--longmemeval", args.longmemeval, "--split", args.split]
    if args.json:
        argv.append("--json")
    if args.verbose:
        argv.append("--verbose")
    if args.policy:
        argv += ["--policy", args.policy]
    os.execv(sys.executable, argv)


def hook(args: argparse.Namespace) -> int:
    from . import hooks  # noqa: PLC0415 -- only hooks pay for the tokenizer

    output = hooks.run(args.event, sys.stdin.read(), paths.socket_path(args.socket), args.budget)
    if output:
        print(output)
    return OK


def browse(args: argparse.Namespace) -> int:
    from hikmah_browse import launch  # noqa: PLC0415 -- only browse loads the browser

    return launch.run(args)
