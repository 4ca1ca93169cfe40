"""The suite's report: figures beside their baselines and targets, the table, the plot."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol


def label(size: int) -> str:
    """10k, 300k, 1M."""
    if size >= 1_000_000 and size % 1_000_000 == 0:
        return f"{size // 1_000_000}M"
    return f"{size // 1000}k" if size % 1000 == 0 else f"{size:,}"


@dataclass(frozen=True)
class Target:
    """A target: on the ratio, on Hikmah's value or on its excess over the baseline, at
    most or at least ``bound``."""

    on: str  # "ratio", "value" or "excess"
    op: str  # "<=", "<", ">="
    bound: float
    unit: str = "x"

    def met(self, value: float, baseline: float | None, ratio: float | None) -> bool | None:
        x = {"ratio": ratio, "value": value, "excess": None}[self.on]
        if self.on == "excess" and baseline is not None:
            x = value - baseline
        if x is None:
            return None
        return {"<=": x <= self.bound, "<": x < self.bound, ">=": x >= self.bound}[self.op]

    def __str__(self) -> str:
        ops = {"<=": "≤", "<": "<", ">=": "≥"}
        unit = "×" if self.unit == "x" else f" {self.unit}"
        excess = "+" if self.on == "excess" else ""
        return f"{ops[self.op]} {excess}{self.bound:g}{unit}"


@dataclass
class Figure:
    name: str
    value: float | None  # None: not measured (``note`` says why)
    unit: str
    baseline: float | None = None
    target: Target | None = None
    judged: bool = True
    note: str = ""
    met: bool | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        if self.value is not None and self.target is not None and self.judged:
            self.met = self.target.met(self.value, self.baseline, self.ratio)

    @property
    def ratio(self) -> float | None:
        if self.value is None or not self.baseline:
            return None
        return self.value / self.baseline

    def row(self) -> list[str]:
        """The table's cells; the note goes under the name (:func:`table`)."""
        value = "-" if self.value is None else show(self.value, self.unit)
        ratio = "-" if self.ratio is None else f"{self.ratio:.2f}×"
        baseline = "-" if self.baseline is None else show(self.baseline, self.unit)
        target = "-" if self.target is None else str(self.target)
        met = {True: "yes", False: "NO", None: "-"}[self.met]
        if self.target is not None and not self.judged:
            met = "not judged"
        return [self.name, value, baseline, ratio, target, met]

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "value": self.value,
            "unit": self.unit,
            "baseline": self.baseline,
            "ratio": self.ratio,
            "target": None if self.target is None else str(self.target),
            "met": self.met,
            "note": self.note,
        }


def show(value: float, unit: str) -> str:
    if unit == "ms":
        return f"{value:.2f} ms" if value < 100 else f"{value:.0f} ms"
    if unit == "s":
        return f"{value:.3f} s"
    if unit == "MiB":
        return f"{value:.1f} MiB"
    return f"{value:,.0f} {unit}"


HEADER = ["figure", "Hikmah", "baseline", "ratio", "target", "met?"]
WIDTH = 100  # the table's columns, at most: a terminal or a CI log beside the code
NAME_MIN = 30


def table(figures: list[Figure], width: int = WIDTH) -> str:
    """Each figure as a row: its name wrapped in the first column, its note below it (in
    parentheses what a value includes; or why there is none), the numbers beside its
    first line."""
    rows = [f.row() for f in figures]
    widths = [max(len(r[i]) for r in [HEADER, *rows]) for i in range(1, len(HEADER))]
    name_width = max(width - sum(widths) - 3 * len(widths), NAME_MIN)
    lines = [_line(HEADER, name_width, widths)]
    lines.append("-+-".join("-" * w for w in (name_width, *widths)))
    for figure, row in zip(figures, rows, strict=True):
        name = _wrap(row[0], name_width, "", "  ")
        if figure.note:
            note = figure.note if figure.value is None else f"({figure.note})"
            name += _wrap(note, name_width, "  ", "   ")
        lines.append(_line([name[0], *row[1:]], name_width, widths))
        lines += [_line([more, *[""] * len(widths)], name_width, widths) for more in name[1:]]
    return "\n".join(lines)


def _wrap(text: str, width: int, first: str, rest: str) -> list[str]:
    return textwrap.wrap(
        text, width, initial_indent=first, subsequent_indent=rest, break_on_hyphens=False
    )


def _line(cells: list[str], name_width: int, widths: list[int]) -> str:
    numbers = (c.rjust(w) for c, w in zip(cells[1:], widths, strict=True))
    return " | ".join([cells[0].ljust(name_width), *numbers]).rstrip()


class Timing(Protocol):
    """One point of the recall curve: a store size, a query set, four latencies."""

    size: int
    query_set: str
    hikmah_p50_ms: float
    hikmah_p95_ms: float
    fts5_p50_ms: float
    fts5_p95_ms: float


def plot(timings: Sequence[Timing], path: Path, title: str, sets: dict[str, str]) -> str:
    """Recall p50/p95 against store size, one panel per query set (``sets``: short name ->
    description), Hikmah and FTS5 on log-log axes; what was done, for the report."""
    try:
        import matplotlib  # noqa: PLC0415 (optional: pip install -e '.[bench]')

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # noqa: PLC0415
    except ImportError:
        return "skipped: matplotlib is not installed (pip install -e '.[bench]')"
    fig, axes = plt.subplots(1, len(sets), figsize=(5 * len(sets), 4.4), sharey=True)
    for ax, short in zip(axes, list(sets), strict=True):
        points = sorted((t for t in timings if t.query_set == short), key=lambda t: t.size)
        sizes = [t.size for t in points]
        for attr, name, style in (
            ("hikmah_p50_ms", "Hikmah p50 (socket)", "o-"),
            ("hikmah_p95_ms", "Hikmah p95 (socket)", "o--"),
            ("fts5_p50_ms", "FTS5 bm25 p50", "s-"),
            ("fts5_p95_ms", "FTS5 bm25 p95", "s--"),
        ):
            color = "tab:blue" if attr.startswith("hikmah") else "tab:orange"
            ax.plot(sizes, [getattr(t, attr) for t in points], style, color=color, label=name)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"{short} queries ({sets[short]})")
        ax.set_xlabel("traces in the store")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("recall latency, ms (top 10)")
    axes[0].legend()
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return f"wrote {path}"
