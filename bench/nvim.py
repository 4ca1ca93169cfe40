"""What a recall costs from the editor: the Neovim plugin's round trip against the CLI's.

    .venv/bin/python bench/nvim.py [--notes 2000] [--calls 50] [--runs 20] [--nvim nvim]

A daemon is started on a fresh store holding ``--notes`` short developer notes (the
Zipf-like workload of the other benchmarks). Then the same recall is made two ways:

- from Lua, in a headless Neovim running the plugin (clients/nvim): ``--calls`` calls of
  ``require("hikmah").call("memory.recall", …)`` one after the other on the plugin's
  connection, each timed inside Neovim with ``vim.loop.hrtime()`` from the call to its
  callback (a few warm-up calls first, and the very first call, which connects, reported
  apart);
- ``hikmah recall QUERY``, ``--runs`` whole-process runs (plus one warm-up), wall time.

For scale, ``daemon.status`` from Lua the same way: a request with little work in the
daemon, so what the plugin and the socket cost by themselves.

The ratio is the CLI's median over the plugin's. Results: a table on stdout and
``bench/results-nvim.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from servers import Server, call_many, hikmahd_argv
from workload import note_lines

from tests.harness.stats import percentile

RESULTS = Path(__file__).with_name("results-nvim.json")
PLUGIN = Path(__file__).resolve().parents[1] / "clients" / "nvim"
SEED = 7
QUERY = "deploy cache worker retry"
WARMUP = 5

LUA = """
local uv = vim.uv or vim.loop
local QUERY = os.getenv("BENCH_QUERY")
local CALLS = tonumber(os.getenv("BENCH_CALLS"))
local WARMUP = tonumber(os.getenv("BENCH_WARMUP"))
local hikmah = require("hikmah")
hikmah.setup({ reminders = false })
local out = { samples = {} }

local function timed(method, params)
  local began, took, got = uv.hrtime(), nil, nil
  hikmah.call(method, params, function(err, result)
    took = (uv.hrtime() - began) / 1e6
    assert(err == nil, err and err.message)
    got = result
  end)
  assert(vim.wait(10000, function() return took ~= nil end, 1), "no reply within 10 s")
  return took, got
end

local first, result = timed("memory.recall", { query = QUERY })
out.first_ms, out.results = first, #result.results
for _ = 1, WARMUP do timed("memory.recall", { query = QUERY }) end
for i = 1, CALLS do out.samples[i] = timed("memory.recall", { query = QUERY }) end
out.status_samples = {}
for i = 1, CALLS do out.status_samples[i] = timed("daemon.status", nil) end
local v = vim.version()
out.version = v.major .. "." .. v.minor .. "." .. v.patch
local file = assert(io.open(os.getenv("BENCH_RESULT"), "w"))
file:write(vim.json.encode(out))
file:close()
vim.cmd("qa!")
"""


def plugin_ms(nvim: str, socket: Path, calls: int, directory: Path) -> dict[str, Any]:
    """Run the Lua side; its samples (ms), first call, result count and Neovim version."""
    result = directory / "nvim-result.json"
    script = directory / "bench.lua"
    script.write_text(LUA)
    env = {
        **os.environ,
        "HIKMAH_SOCKET": str(socket),
        "BENCH_QUERY": QUERY,
        "BENCH_CALLS": str(calls),
        "BENCH_WARMUP": str(WARMUP),
        "BENCH_RESULT": str(result),
    }
    subprocess.run(
        [nvim, "--headless", "-u", "NONE", "-i", "NONE", "--cmd", f"set rtp^={PLUGIN}",
         "-c", f"luafile {script}"],
        env=env, check=True, timeout=120, capture_output=True, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    measured: dict[str, Any] = json.loads(result.read_text())
    return measured


def cli_ms(argv: list[str], runs: int) -> tuple[float, int]:
    """Median wall time of ``runs`` whole-process runs, and the last run's output size."""
    times, out = [], ""
    for _ in range(runs + 1):  # the first run warms the page cache and is not counted
        began = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=60)
        times.append((time.perf_counter() - began) * 1000)
        out = done.stdout
    return statistics.median(times[1:]), len(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--notes", type=int, default=2_000, help="notes in the store")
    parser.add_argument("--calls", type=int, default=50, help="plugin calls (median)")
    parser.add_argument("--runs", type=int, default=20, help="CLI runs (median)")
    parser.add_argument("--nvim", default=shutil.which("nvim") or "nvim", help="Neovim binary")
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="hkn", dir="/tmp"))
    server = Server("hikmahd", root, hikmahd_argv(root, "--log-level", "warning"))
    try:
        server.start()
        call_many(server.socket, note_lines(args.notes, SEED))
        lua = plugin_ms(args.nvim, server.socket, args.calls, root)
        cli = [sys.executable, "-m", "hikmah_cli", "--socket", str(server.socket)]
        script = Path(sys.executable).with_name("hikmah")
        if script.exists():  # the installed entry point, as a person runs it
            cli = [str(script), "--socket", str(server.socket)]
        cli_median, cli_bytes = cli_ms([*cli, "recall", QUERY], args.runs)
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
    samples = lua["samples"]
    plugin_median = statistics.median(samples)
    rows = [
        {
            "what": f"plugin: memory.recall from Lua (median of {args.calls})",
            "median_ms": plugin_median,
            "p90_ms": percentile(samples, 90),
        },
        {
            "what": f"plugin: daemon.status from Lua (median of {args.calls})",
            "median_ms": statistics.median(lua["status_samples"]),
            "p90_ms": percentile(lua["status_samples"], 90),
        },
        {
            "what": "plugin: first call (connects)",
            "median_ms": lua["first_ms"],
            "p90_ms": None,
        },
        {
            "what": f"hikmah recall, whole process (median of {args.runs})",
            "median_ms": cli_median,
            "p90_ms": None,
        },
    ]
    ratio = cli_median / plugin_median
    print(
        f"Recall of {QUERY!r} ({lua['results']} results), {args.notes} notes in the store,"
        f" Neovim {lua['version']}"
    )
    print(f"{'':48} {'median ms':>10} {'p90 ms':>8}")
    for row in rows:
        p90 = "-" if row["p90_ms"] is None else f"{row['p90_ms']:.2f}"
        print(f"{row['what']:48} {row['median_ms']:10.2f} {p90:>8}")
    print(f"the CLI takes {ratio:.0f}× the plugin's round trip (CLI output: {cli_bytes} B)")
    RESULTS.write_text(
        json.dumps(
            {
                "notes": args.notes,
                "query": QUERY,
                "results": lua["results"],
                "calls": args.calls,
                "runs": args.runs,
                "machine": {
                    "cpus": os.cpu_count(),
                    "python": platform.python_version(),
                    "nvim": lua["version"],
                },
                "rows": rows,
                "cli_over_plugin": ratio,
            },
            indent=2,
        )
        + "\n"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
