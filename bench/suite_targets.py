"""The suite's targets: what each judged figure of ``bench/run`` must reach."""

RATIO_TIER, RATIO_TARGET = 100_000, 0.5  # recall p50/p95 at most 0.5x FTS5 at 100k
BIG_TIER, BIG_P50_MS, BIG_P95_MS = 1_000_000, 25.0, 100.0
READY_TARGET_S = 1.0
WRITE_TARGET = 0.8  # 16 durable clients at least 0.8x the no-sync daemon
SEMANTIC_WRITE_TARGET = 0.9  # durable remember within 10% of the semantic channel off
SEMANTIC_IMPORT_TARGET = 0.8  # bulk import at least 0.8x its rate with the channel off
IMPORT_TARGET = 5000.0  # traces/s through memory.import
LONE_WRITER_TARGET = 0.5  # one client's durable remember over a raw LMDB sync commit
CLI_TARGET = 2.5
FIRST_ANSWER_TARGET_S = 0.1  # status and recall after a restart, from the socket accepting
CONNECT_TARGET_MS = 0.5  # what a new connection adds to a call
LATENESS_TARGET_MS = 50.0
# Codex offers the model only the MCP servers that answered within about a second.
AGENT_READY_TARGET_MS = 500.0
# Coming over from another tool costs at most twice importing Hikmah's own export.
MIGRATION_TARGET = 2.0
