"""How soon hikmah-agent is ready for its host: wall time from starting the process to the
answers a host waits for before it offers the tools to the model.

    .venv/bin/python bench/agent.py [--runs 20]

Each run starts the installed ``hikmah-agent`` (the script beside this Python, as
``hikmah setup`` writes it) the way a host does, writes ``initialize``, the
``initialized`` notification and ``tools/list`` at once, and times the two answers
(no daemon is needed: the server connects on the first tool call). Codex starts the
model's first turn about a second after it started its MCP servers, without the tools
of a server not ready by then (docs/agents.md).

Baselines, run by run in turn with the server so that load elsewhere hits all alike:
``python -c pass`` with the same interpreter (judged by bench/run), and, for where
the time used to go, ``python -c "import mcp.server.mcpserver"`` (the official SDK's
server, what hikmah-agent imported before it spoke MCP itself; reported when the SDK
is installed). Results: a table on stdout and ``bench/results-agent.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from hooks import run_ms

RESULTS = Path(__file__).with_name("results-agent.json")
HANDSHAKE = b"".join(
    json.dumps(message).encode() + b"\n"
    for message in (
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "codex-mcp-client", "version": "0.171.0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
    )
)


def agent_argv() -> list[str]:
    script = Path(sys.executable).with_name("hikmah-agent")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "hikmah_agent"]
    return [*command, "--no-autostart", "--socket", "/nonexistent/hikmahd.sock"]


def handshake_ms() -> tuple[float, float]:
    """(initialize answered, tools/list answered), ms from the start of the process."""
    began = time.perf_counter()
    with subprocess.Popen(
        agent_argv(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    ) as process:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(HANDSHAKE)
        process.stdin.flush()
        initialized = json.loads(process.stdout.readline())
        first = time.perf_counter()
        listed = json.loads(process.stdout.readline())
        second = time.perf_counter()
        process.stdin.close()
        process.wait(timeout=30)
    if "result" not in initialized or not listed.get("result", {}).get("tools"):
        raise RuntimeError(f"hikmah-agent did not answer the handshake: {initialized} {listed}")
    return (first - began) * 1000, (second - began) * 1000


def sdk_importable() -> bool:
    probe = [sys.executable, "-c", "import importlib.util as u; exit(not u.find_spec('mcp'))"]
    return subprocess.run(probe, check=False).returncode == 0


def measure(runs: int) -> dict[str, Any]:
    """Medians of ``runs`` interleaved runs of each command, after one warm-up each."""
    baselines = {"python_pass": [sys.executable, "-c", "pass"]}
    if sdk_importable():
        baselines["import_sdk"] = [sys.executable, "-c", "import mcp.server.mcpserver"]
    for argv in baselines.values():
        run_ms(argv, "")
    handshake_ms()
    times: dict[str, list[float]] = {name: [] for name in (*baselines, "initialize", "tools_list")}
    for _ in range(runs):
        for name, argv in baselines.items():
            times[name].append(run_ms(argv, "")[0])
        initialize, tools_list = handshake_ms()
        times["initialize"].append(initialize)
        times["tools_list"].append(tools_list)
    found: dict[str, Any] = {"runs": runs, "agent_argv": agent_argv()}
    for name, values in times.items():
        found[f"{name}_ms"] = statistics.median(values)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=20, help="runs per command (median)")
    args = parser.parse_args(argv)
    found = measure(args.runs)
    baseline = found["python_pass_ms"]
    rows = [
        ("python -c pass (baseline)", baseline),
        ("hikmah-agent: initialize answered", found["initialize_ms"]),
        ("hikmah-agent: tools/list answered", found["tools_list_ms"]),
    ]
    if "import_sdk_ms" in found:
        rows.append(('python -c "import mcp.server.mcpserver"', found["import_sdk_ms"]))
    print(f"hikmah-agent start, wall median of {args.runs} runs")
    print(f"{'command':42} {'median ms':>10} {'× baseline':>11}")
    for name, value in rows:
        print(f"{name:42} {value:10.1f} {value / baseline:10.2f}×")
    machine = {"cpus": os.cpu_count(), "python": platform.python_version()}
    RESULTS.write_text(json.dumps({**found, "machine": machine}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
