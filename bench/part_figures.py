"""The figures of the suite's parts measured once a run rather than at each tier:
remember throughput, reminder lateness, bulk import, the vault, sync, the screen,
hikmah-agent's start and import from other tools."""

from __future__ import annotations

from typing import Any

import migration
import sync
import vault
from bulk_import import ImportResult
from corpus import QUERY_SETS
from lateness import LatenessRow
from report import Figure, Target, label
from rpc_phases import Measured, find
from suite_plan import Plan
from suite_targets import (
    AGENT_READY_TARGET_MS,
    IMPORT_TARGET,
    LATENESS_TARGET_MS,
    LONE_WRITER_TARGET,
    MIGRATION_TARGET,
    RATIO_TARGET,
    SEMANTIC_IMPORT_TARGET,
    SEMANTIC_WRITE_TARGET,
    WRITE_TARGET,
)


def screen_figures(found: dict[str, Any]) -> list[Figure]:
    """The screen of an agent's write beside the credential detector on the same text
    (reported: every write pays the detector, an agent's also the screen)."""
    texts = (("note", "an agent's note (median)"), ("prose_2k", "2 KiB of prose"),
             ("prose_256k", "256 KiB of prose"))  # fmt: skip
    return [
        Figure(
            f"screen of {what} vs the credential detector on it",
            found[f"{key}_screen_ms"],
            "ms",
            found[f"{key}_detector_ms"],
        )
        for key, what in texts
    ]


def agent_figures(found: dict[str, Any], plan: Plan) -> list[Figure]:
    baseline = found["python_pass_ms"]
    figures = [
        Figure(
            "hikmah-agent start to initialize answered vs venv python -c pass",
            found["initialize_ms"],
            "ms",
            baseline,
        ),
        Figure(
            "hikmah-agent start to tools/list answered vs venv python -c pass",
            found["tools_list_ms"],
            "ms",
            baseline,
            Target("value", "<", AGENT_READY_TARGET_MS, "ms"),
            judged=not plan.quick,
        ),
    ]
    if "import_sdk_ms" in found:
        figures.append(
            Figure(
                "MCP SDK server import (hikmah-agent's old start) vs venv python -c pass",
                found["import_sdk_ms"],
                "ms",
                baseline,
            )
        )
    return figures


def migration_figures(rows: list[migration.Row], plan: Plan) -> list[Figure]:
    figures = []
    for row in rows:
        size = label(row.items)
        figures.append(
            Figure(
                f"import --from {row.source}, {size} records end to end vs the same traces"
                " as JSON Lines",
                row.import_ms,
                "ms",
                row.baseline_ms,
                Target("ratio", "<=", MIGRATION_TARGET),
                judged=not plan.quick,
            )
        )
        figures.append(
            Figure(
                f"import --from {row.source} again, {size} records (writes nothing) vs the import",
                row.reimport_ms,
                "ms",
                row.import_ms,
            )
        )
    return figures


def write_figures(rows: list[Measured], plan: Plan) -> list[Figure]:
    def per_s(target: str, workload: str, clients: int) -> float:
        return find(rows, target, workload, clients).per_s

    raw1 = per_s("raw LMDB, commit per write", "durable put+commit", 1)
    raw16 = per_s("raw LMDB, commit per 16 writes", "durable put+commit", 16)
    figures = []
    for n in (1, 16):
        durable = per_s("hikmahd durable", "memory.remember", n)
        nosync = per_s("hikmahd no-sync", "memory.remember", n)
        lexical = per_s("hikmahd durable, semantic off", "memory.remember", n)
        clients = "1 client" if n == 1 else f"{n} clients"
        target = Target("ratio", ">=", WRITE_TARGET) if n == 16 else None
        figures += [
            Figure(
                f"remember durable, {clients}, writes/s vs durable with the semantic channel off",
                durable,
                "/s",
                lexical,
                Target("ratio", ">=", SEMANTIC_WRITE_TARGET),
                judged=not plan.quick,
            ),
            Figure(
                f"remember durable, {clients}, writes/s vs daemon no-sync",
                durable,
                "/s",
                nosync,
                target,
                judged=not plan.quick,
            ),
            Figure(
                f"remember durable, {clients}, writes/s vs raw LMDB commit per write",
                durable,
                "/s",
                raw1,
                Target("ratio", ">=", LONE_WRITER_TARGET) if n == 1 else None,
                judged=not plan.quick,
            ),
        ]
        if n == 16:
            figures.append(
                Figure(
                    f"remember durable, {clients}, writes/s vs raw LMDB commit per 16 writes",
                    durable,
                    "/s",
                    raw16,
                )
            )
    return figures


def lateness_figures(rows: list[LatenessRow], size: int, plan: Plan) -> list[Figure]:
    idle, loaded = rows
    return [
        Figure(
            f"reminder lateness p99, {loaded.clients} clients recalling ({label(size)} store)"
            " vs idle",
            loaded.p99_ms,
            "ms",
            idle.p99_ms,
            Target("value", "<", LATENESS_TARGET_MS, "ms"),
            judged=not plan.quick,
        )
    ]


def import_figures(
    found: ImportResult, lexical: ImportResult, corpus_rate: float, size: int, plan: Plan
) -> list[Figure]:
    name = (
        f"bulk import {label(size)} traces through `hikmah import`, traces/s"
        " vs in-process Store.apply (no sync)"
    )
    if not found.available:
        return [Figure(name, None, "/s", corpus_rate, note="not available (no memory.import)")]
    if found.error is not None:
        return [Figure(name, None, "/s", corpus_rate, note=f"refused: {found.error[:60]}")]
    during = f"{label(size)} recall p50 while the vectors catch up with the import vs FTS5"
    caught = found.catching_up
    return [
        Figure(
            name,
            found.per_s,
            "/s",
            corpus_rate,
            Target("value", ">=", IMPORT_TARGET, "/s"),
            judged=not plan.quick,
        ),
        Figure(
            during,
            None if caught is None else caught.hikmah_p50_ms,
            "ms",
            None if caught is None else caught.fts5_p50_ms,
            Target("ratio", "<=", RATIO_TARGET),
            judged=not plan.quick,
            note="caught up before the first query"
            if caught is None
            else f"{caught.queries} queries; p95 {caught.hikmah_p95_ms:.2f}"
            f" vs {caught.fts5_p95_ms:.2f} ms",
        ),
        Figure(
            f"bulk import {label(size)} traces, traces/s vs the semantic channel off",
            found.per_s,
            "/s",
            lexical.per_s,
            Target("ratio", ">=", SEMANTIC_IMPORT_TARGET),
            judged=not plan.quick,
        ),
    ]


def sync_figures(found: sync.SyncResult) -> list[Figure]:
    figures = [
        Figure(
            "git: commit on one device to recallable on another vs the git round trip alone",
            found.git.median,
            "s",
            found.git.baseline,
        )
    ]
    st = found.syncthing
    name = "Syncthing: commit to recallable on another device vs a 300-byte file crossing"
    if st is None:
        figures.append(Figure(name, None, "s", note="not measured (no syncthing)"))
    else:
        figures.append(Figure(name, st.median, "s", st.baseline))
    a = found.apply
    figures.append(
        Figure(
            f"{label(a.records)} remote records looked at and applied vs rebuilt locally",
            a.look_s + a.apply_s,
            "s",
            a.rebuild_s,
        )
    )
    return figures


def vault_figures(found: vault.VaultResult) -> list[Figure]:
    size = label(found.traces)
    writes = found.writes_per_s
    figures = [
        Figure(
            f"{size} vault on, remember durable (batches of 8), traces/s vs vault off",
            writes["on"],
            "/s",
            writes["off"],
        )
    ]
    for what, seconds in found.vectors_s.items():
        figures.append(
            Figure(
                f"{size} vault on, the vector file's {what} (sealed) vs vault off",
                seconds["on"],
                "s",
                seconds["off"],
            )
        )
    for short, name in QUERY_SETS.items():
        on, off = found.recall_ms[name]["on"], found.recall_ms[name]["off"]
        for i, q in ((0, "p50"), (1, "p95")):
            figures.append(
                Figure(
                    f"{size} vault on, recall {short} {q} in-process vs vault off",
                    on[i],
                    "ms",
                    off[i],
                )
            )
    return figures
