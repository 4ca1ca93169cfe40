"""The commands, in a real Neovim against a real hikmahd: what reaches the daemon, and what
the person reads in the floating windows and the quickfix list."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from tests.harness.daemon import Running
from tests.harness.nvim import Nvim

INFO, WARN, ERROR = 2, 3, 4  # vim.log.levels


def seed_correction(daemon: Running) -> dict[str, str]:
    """A belief, a verified correction of it, and a third trace claiming another value."""
    old = daemon.call(
        "memory.remember",
        content="The staging database runs PostgreSQL 15",
        kind="belief",
        claim_key="staging.db.version",
        claim_value="15",
    )["trace"]["id"]
    new = daemon.call(
        "memory.remember",
        content="The staging database runs PostgreSQL 16 since the upgrade",
        kind="correction",
        source="human:ana",
        verified=True,
        claim_key="staging.db.version",
        claim_value="16",
        supersedes=old,
    )["trace"]["id"]
    other = daemon.call(
        "memory.remember",
        content="Staging database is PostgreSQL 14 according to the runbook",
        source="doc:runbook",
        claim_key="staging.db.version",
        claim_value="14",
    )["trace"]["id"]
    return {"old": old, "new": new, "other": other}


def project(short_tmp: Path) -> tuple[Path, Path]:
    """A git checkout (a ``.git`` entry) and a directory inside it."""
    root = short_tmp / "proj"
    (root / ".git").mkdir(parents=True)
    inside = root / "src" / "deep"
    inside.mkdir(parents=True)
    return root, inside


def test_remember_a_visual_selection_then_recall_it_in_a_float(
    daemon: Running, nvim: Nvim, short_tmp: Path
) -> None:
    root, inside = project(short_tmp)
    notes = inside / "notes.txt"
    notes.write_text("intro line\nrule: Never deploy on Fridays, ever.\nother line\n")
    daemon.call(
        "memory.remember", content="Deploy freeze on Fridays at the shop", scope="project:/shop"
    )
    done = nvim.run(
        f"""
        vim.cmd("edit {notes}")
        T.answers = {{ "constraint", "deploy, Fridays release", 1 }}
        -- select "Never deploy on Fridays" with the keyboard, then leave visual mode
        vim.api.nvim_win_set_cursor(0, {{ 2, 6 }})
        vim.cmd("normal! v22l\\27")
        vim.cmd("'<,'>HikmahRemember")
        T.wait(5000, function() return #T.notes_with("remembered") > 0 end, "remembered")
        T.data.remembered = T.notes_with("remembered")[1].msg
        require("hikmah").setup({{ recall_scope = "project", reminders = false }})
        vim.cmd("HikmahRecall fridays deploy")
        T.data.recall = T.float_lines(1, "recall float")
        require("hikmah").setup({{ reminders = false }}) -- every scope
        vim.cmd("HikmahRecall fridays deploy")
        T.data.everywhere = T.float_lines(2, "second recall float")
        """,
        socket=daemon.socket,
        cwd=inside,
    )
    assert [p["prompt"] for p in done["prompts"]] == [
        "Hikmah: kind of memory",
        "Tags (space or comma separated, empty for none): ",
        "Hikmah: scope",
    ]
    scope = f"project:{root.resolve()}"
    assert done["prompts"][2]["items"] == [scope, "global"]
    trace_id = done["data"]["remembered"].split()[2]
    shown = daemon.call("memory.show", id=trace_id)["trace"]
    assert shown["content"] == "Never deploy on Fridays"
    assert shown["kind"] == "constraint"
    assert shown["scope"] == scope
    assert shown["tags"] == ["deploy", "fridays", "release"]
    assert shown["provenance"]["locator"] == f"{notes}:2"
    assert shown["provenance"]["source"].startswith("human:")
    assert shown["provenance"]["verified"] is False

    lines: list[str] = done["data"]["recall"]
    assert lines[0] == 'Hikmah recall "fridays deploy": 1 result'
    assert lines[1].startswith("Recalled memories are evidence")
    assert lines[3] == " 1. [constraint] Never deploy on Fridays"
    day = time.strftime("%Y-%m-%d", time.gmtime())
    assert lines[4].startswith(f"    {day} · human:") and ", unverified · score 0." in lines[4]
    assert f"    {scope} · {trace_id}" in lines  # wrapped between parts, never inside one
    assert lines[-1] == "<CR> full trace and history · q close"
    everywhere = "\n".join(done["data"]["everywhere"])
    assert 'Hikmah recall "fridays deploy": 2 results' in everywhere
    assert "Deploy freeze on Fridays at the shop" in everywhere and "project:/shop" in everywhere


def test_recall_the_word_under_the_cursor_and_open_the_full_trace(
    daemon: Running, nvim: Nvim, short_tmp: Path
) -> None:
    ids = seed_correction(daemon)
    text = short_tmp / "db.md"
    text.write_text("We should check PostgreSQL before the release.\n")
    done = nvim.run(
        f"""
        vim.cmd("edit {text}")
        vim.api.nvim_win_set_cursor(0, {{ 1, 18 }}) -- inside "PostgreSQL"
        vim.cmd("HikmahRecall")
        local lines = T.float_lines(1, "recall float")
        T.data.recall = lines
        T.cursor_on("{ids["new"]}")
        T.keys("<CR>")
        T.data.trace = T.float_lines(2, "trace float")
        T.keys("q")
        T.wait(2000, function() return #T.floats() == 1 end, "trace float closed")
        T.data.after_q = #T.floats()
        T.keys("q")
        -- now a visual selection as the query
        vim.cmd("normal! 0fcv15l\\27")
        vim.cmd("'<,'>HikmahRecall")
        T.data.selected = T.float_lines(1, "recall of the selection")[1]
        """,
        socket=daemon.socket,
    )
    recall = "\n".join(done["data"]["recall"])
    assert done["data"]["recall"][0].startswith('Hikmah recall "PostgreSQL": 2 results')
    assert "[correction] The staging database runs PostgreSQL 16" in recall
    assert "human:ana, verified" in recall
    assert f"CONFLICTS with {ids['other']}" in recall
    assert f"supersedes {ids['old']}" in recall
    assert "claims staging.db.version = 16" in recall

    trace: list[str] = done["data"]["trace"]
    assert (
        trace[0]
        == f"{ids['new']} · correction · {time.strftime('%Y-%m-%d', time.gmtime())} · active"
    )
    assert "  The staging database runs PostgreSQL 16 since the upgrade" in trace
    assert "  source     human:ana, verified" in trace
    assert f"  supersedes {ids['old']}" in trace
    history = trace[trace.index("history (oldest first):") + 1 :]
    assert history[0].startswith(f"  {ids['old']} · belief · ")
    assert history[0].endswith(f"superseded → {ids['new']}")
    assert any(
        line.startswith(f"  {ids['new']} ") and line.endswith("← this trace") for line in history
    )
    assert done["data"]["after_q"] == 1
    assert done["data"]["selected"].startswith('Hikmah recall "check PostgreSQL": 2 results')
    assert done["notes"] == []


def commitments(daemon: Running) -> dict[str, str]:
    now = int(time.time() * 1000)
    late = daemon.call(
        "memory.remember",
        content="Send the quarterly report to finance",
        kind="commitment",
        deadline=now - 3 * 3600_000,
    )["trace"]["id"]
    soon = daemon.call(
        "memory.remember",
        content="Renew the staging TLS certificate",
        kind="commitment",
        deadline="+2d",
    )["trace"]["id"]
    return {"late": late, "soon": soon}


def status_of(daemon: Running, trace_id: str) -> Any:
    return daemon.call("memory.show", id=trace_id)["status"]


def test_commitments_in_a_float_and_fulfill_from_there(daemon: Running, nvim: Nvim) -> None:
    ids = commitments(daemon)
    done = nvim.run(
        """
        vim.cmd("HikmahCommitments")
        local before, win = T.float_lines(1, "commitments float")
        T.data.before = before
        T.cursor_on("Send the quarterly report")
        T.keys("f")
        T.wait(5000, function() return #T.notes_with("fulfilled") > 0 end, "fulfilled")
        local buf = vim.api.nvim_win_get_buf(win)
        T.wait(5000, function()
          return #vim.api.nvim_buf_get_lines(buf, 0, -1, false) < #before
        end, "the float re-rendered")
        T.data.after = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
        """,
        socket=daemon.socket,
    )
    before: list[str] = done["data"]["before"]
    assert before[0] == "Hikmah promise queue: 2 commitments"
    assert before[2].startswith(" 1. OVERDUE since ") and before[2].endswith(
        f"(3h ago) · {ids['late']}"
    )
    assert before[3] == "    Send the quarterly report to finance"
    assert before[4].startswith(" 2. due ") and f"(in 2d) · {ids['soon']}" in before[4]
    assert before[-1] == "f fulfill · <CR> full trace · q close"
    assert [n["msg"] for n in done["notes"]] == [f"Hikmah: fulfilled {ids['late']}"]
    assert status_of(daemon, ids["late"]) == "fulfilled"
    assert status_of(daemon, ids["soon"]) == "active"
    assert done["data"]["after"][0] == "Hikmah promise queue: 1 commitment"
    assert ids["late"] not in "\n".join(done["data"]["after"])


def test_commitments_in_the_quickfix_list_and_fulfill_from_there(
    daemon: Running, nvim: Nvim
) -> None:
    ids = commitments(daemon)
    done = nvim.run(
        """
        require("hikmah").setup({ commitments = "quickfix", reminders = false })
        vim.cmd("HikmahCommitments 1")
        T.wait(5000, function() return vim.bo.buftype == "quickfix" end, "quickfix window")
        T.data.title = vim.fn.getqflist({ title = 1 }).title
        T.data.items = vim.tbl_map(function(i) return i.text end, vim.fn.getqflist())
        vim.cmd("HikmahFulfill")
        T.wait(5000, function() return #T.notes_with("fulfilled") > 0 end, "fulfilled")
        T.wait(5000, function() return #vim.fn.getqflist() == 0 end, "the list refreshed")
        """,
        socket=daemon.socket,
    )
    assert done["data"]["title"] == "Hikmah commitments"
    items: list[str] = done["data"]["items"]
    assert len(items) == 1  # within 1 hour: only the overdue one
    assert items[0].startswith("OVERDUE since ")
    assert items[0].endswith(f": Send the quarterly report to finance [{ids['late']}]")
    assert status_of(daemon, ids["late"]) == "fulfilled"


def test_conflicts_show_each_value_with_its_trace(daemon: Running, nvim: Nvim) -> None:
    ids = seed_correction(daemon)
    done = nvim.run(
        """
        vim.cmd("HikmahConflicts")
        T.data.lines = T.float_lines(1, "conflicts float")
        """,
        socket=daemon.socket,
    )
    lines: list[str] = done["data"]["lines"]
    assert lines[0] == "Hikmah conflicts: 1 open conflict"
    assert lines[2] == "staging.db.version"
    text = "\n".join(lines)
    assert f"  = 14 · {ids['other']} · " in text and "doc:runbook, unverified" in text
    assert f"  = 16 · {ids['new']} · " in text and "human:ana, verified" in text
    assert "      Staging database is PostgreSQL 14 according to the runbook" in lines
    assert ids["old"] not in text  # superseded: no longer a claim


def test_a_refusal_is_shown_with_the_daemons_words(daemon: Running, nvim: Nvim) -> None:
    done = nvim.run(
        """
        T.answers = { "observation", "", "global" }
        vim.cmd("HikmahRemember deploy key is ghp_1234567890abcdefghijklmnopqrstuvwxyzAB")
        T.wait(5000, function() return #T.notes > 0 end, "a message")
        """,
        socket=daemon.socket,
    )
    [note] = done["notes"]
    assert note["level"] == ERROR
    assert note["msg"].startswith(
        "Hikmah: remember failed: content looks like it holds a credential"
    )
    assert daemon.call("daemon.status")["counts"]["active"] == 0
