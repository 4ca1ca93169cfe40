"""The commands that tend the daemon and its store: purge and compact, the vault, the
ledger's verification, the policy, sync, status, stop, person presence, setup."""

import argparse
from typing import TYPE_CHECKING

from hikmah.model.display import visible

from . import render_memory, render_service, runners
from .command import Command, OneOf, Request, always, arg, given
from .session import UsageError

if TYPE_CHECKING:  # the replies' types, for mypy only: the CLI reads replies as Reply
    from hikmah.model.wire.service import PolicyResult


def _verify(args: argparse.Namespace) -> Request:
    params = given(args, "accept_tail", "reset_head")
    return "ledger.verify", {
        "expect_head": args.expect_head,
        **params,
    } if args.expect_head else params


SYNC_ACTIONS = ("invite", "join", "status", "remove")


def _sync(args: argparse.Namespace) -> Request:
    if args.action is None:
        if args.target is not None:
            raise UsageError(f"no sync action {args.target!r}: {', '.join(SYNC_ACTIONS)}")
        return "sync.exchange", {}
    if args.action in ("join", "remove") and args.target is None:
        what = "CODE" if args.action == "join" else "DEVICE"
        raise UsageError(f"say which: hikmah sync {args.action} {what}")
    if args.action == "join":
        return "sync.join", {"code": args.target}
    if args.action == "remove":
        return "sync.remove", {"device": args.target, "delete": args.delete}
    if args.target is not None:
        raise UsageError(f"hikmah sync {args.action} takes no argument")
    if args.action == "status":
        return "sync.status", {"verify": args.verify}
    return "sync.invite", {}


def _show_policy(result: "PolicyResult") -> str:
    path = visible(result.path)
    if result.defaults:
        note = f"# the built-in defaults; a policy file ({path}) changes any of them\n"
    elif result.exists:
        note = f"# in force, from {path}\n"
    else:
        note = f"# in force: the built-in defaults (there is no policy file {path})\n"
    if result.error:
        note += f"# NOT APPLIED (previous policy stays): {result.error}\n"
    return note + result.toml.rstrip()


COMMANDS: tuple[Command, ...] = (
    Command(
        "purge",
        "retention deletion of a trace (a person only)",
        (arg("--id", required=True), arg("--reason", required=True, help="kept in the tombstone")),
        lambda a: ("memory.purge", {"id": a.id, "reason": a.reason}),
        render_memory.purged,
        person=always,
    ),
    Command(
        "compact",
        "rewrite the ledger without the text of purged traces (a person only)",
        request=lambda a: ("ledger.compact", {}),
        show=render_service.compacted,
        person=always,
    ),
    Command(
        "vault",
        "the encrypted vault: which keys it uses, or rotate its master key (a person only)",
        (
            arg(
                "action",
                choices=["status", "rotate"],
                help="status: key ids and keyring backend; rotate: re-wrap every data key under"
                " a new master key (payloads are not rewritten; the old master is then deleted)",
            ),
        ),
        lambda a: (f"vault.{a.action}", {}),
        {"vault.status": render_service.vault_status, "vault.rotate": render_service.rotated},
        person=lambda a: a.action == "rotate",
    ),
    Command(
        "verify-ledger",
        "check the hash chain and the head",
        (
            OneOf(
                (
                    arg("--expect-head", metavar="SEQ:HASH", help="a head pinned elsewhere"),
                    arg("--accept-tail", action="store_true", help="acknowledge appended records"),
                    arg(
                        "--reset-head", action="store_true", help="rewrite the head from the ledger"
                    ),
                )
            ),
        ),
        _verify,
        render_service.verified,
        person=lambda a: a.accept_tail or a.reset_head,
    ),
    Command(
        "policy",
        "the policy in force, as TOML",
        (arg("--print-defaults", action="store_true", help="every field with its default"),),
        lambda a: ("policy.get", {"defaults": a.print_defaults}),
        _show_policy,
    ),
    Command(
        "sync",
        "one memory on every machine: exchange with the sync folder, pair, remove, status",
        (
            arg("action", nargs="?", choices=SYNC_ACTIONS, help="nothing: one exchange now"),
            arg("target", nargs="?", metavar="CODE|DEVICE", help="join: the code; remove: the id"),
            arg("--verify", action="store_true", help="(status) check every chain in the folder"),
            arg("--delete", action="store_true", help="(remove) delete its directory too"),
        ),
        _sync,
        {
            "sync.exchange": render_service.synced,
            "sync.invite": render_service.invited,
            "sync.join": render_service.joined,
            "sync.remove": render_service.sync_removed,
            "sync.status": render_service.sync_status,
        },
        description="Sync memory through a folder a file-sync engine keeps equal on your"
        " machines (Syncthing, a git clone, a cloud drive; [sync] folder in the policy)."
        " `hikmah sync` exchanges now: applies what the other devices published and"
        " publishes this one's. `invite` prints a one-time code; `join CODE` on another"
        " device pairs it (a person only, both). `status` lists the devices, their heads,"
        " what is pending and anything refused; `remove DEVICE` stops trusting one."
        " See docs/sync.md.",
        person=lambda a: a.action in ("invite", "join", "remove"),
    ),
    Command(
        "status",
        "the daemon, the store, the policy, the reminders",
        request=lambda a: ("daemon.status", {}),
        show=render_service.status,
    ),
    Command(
        "stop",
        "stop the daemon: queued writes are committed first (a person only)",
        run=runners.stop,
        description="Ask the daemon on this socket to stop, as SIGTERM does: it accepts no"
        " more connections, commits every write already queued, gives other replies up to"
        " 2 s, and exits; this waits until its process is gone. Never starts a daemon: when"
        " none runs, it says so and exits 0. A daemon systemd's socket unit started is"
        " started again by the next call (systemctl --user stop hikmahd.socket"
        " hikmahd.service keeps it stopped). Agent sessions are refused.",
    ),
    Command(
        "passphrase",
        "person presence: set, change or remove the passphrase person-only actions ask for",
        (arg("action", choices=["set", "change", "remove"]),),
        run=runners.passphrase,
        description="Person presence is off until you set a passphrase. Then every action"
        " only a person may take (verified writes and corrections, purge, compact, accepting"
        " a ledger tail, resetting the head, vault rotation, verified promotion, imports of"
        " verified traces, changing or removing the passphrase, stopping the daemon) asks"
        " for it, on this terminal (or with pinentry in a desktop session), never from"
        " standard input. A proof holds for the terminal and the shell that typed it for"
        " [presence] ticket_seconds (300), or for the one command that asked with"
        " ticket_seconds = 0 and wherever the kernel lets programs push keys into a"
        " terminal (TIOCSTI). Only the passphrase's Argon2id hash is kept, in the ledger;"
        " each change is a ledger record. Forgot it? docs/security.md.",
    ),
    Command(
        "presence",
        "prove you are at this terminal now (asks for the passphrase), or --end the proof",
        (arg("--end", action="store_true", help="drop this terminal's ticket now"),),
        run=runners.presence,
        description="Prove person presence for this terminal and the shell that runs this"
        " command, as a person-only command would, and say until when it holds. With --end,"
        " drop it at once (say before starting an agent in this shell).",
    ),
    Command(
        "setup",
        "wire Hikmah into Claude Code, Codex, Gemini CLI or OpenCode (MCP server and hooks),"
        " or systemd (user units)",
        (
            arg(
                "host",
                choices=["claude", "codex", "gemini", "opencode", "systemd"],
                help="the agent, or systemd",
            ),
            arg("--remove", action="store_true", help="take exactly our entries out again"),
            arg("--no-mcp", action="store_true", help="(an agent) hooks only, no MCP server"),
        ),
        run=runners.setup,
        description="Add the hikmah-agent MCP server and the session-start and prompt hooks"
        " to the agent's user configuration: ~/.claude.json and ~/.claude/settings.json;"
        " ~/.codex/config.toml and ~/.codex/hooks.json; ~/.gemini/settings.json, with a"
        " policy rule letting the read-only tools run without asking"
        " (~/.gemini/policies/hikmah.toml); ~/.config/opencode/opencode.json, with a plugin"
        " that runs the hooks (~/.config/opencode/plugins/hikmah.js). $CLAUDE_CONFIG_DIR,"
        " $CODEX_HOME, $GEMINI_CLI_HOME, $OPENCODE_CONFIG_DIR and $XDG_CONFIG_HOME move them"
        " as they move what the host reads. Safe to rerun; everything else in"
        " those files is kept, and each changed file is backed up beside itself first."
        " With systemd: write hikmahd.socket and hikmahd.service, running the hikmahd of"
        " this install, into ~/.config/systemd/user ($XDG_CONFIG_HOME/systemd/user), and"
        " print the systemctl commands to run; a unit this did not write, or one edited"
        " since, is never replaced (your own settings go in a drop-in: systemctl --user"
        " edit hikmahd.service).",
        daemon=False,
    ),
)
