"""The help file builds its tags, and names every command and every option."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.harness.nvim import PLUGIN, Nvim


def test_help_tags_cover_every_command_and_option(nvim: Nvim, short_tmp: Path) -> None:
    doc = short_tmp / "doc"
    shutil.copytree(PLUGIN / "doc", doc)
    done = nvim.run(
        f"""
        vim.cmd("helptags {doc}")
        T.data.commands = vim.tbl_keys(vim.api.nvim_get_commands({{}}))
        T.data.options = vim.tbl_keys(require("hikmah.config").defaults())
        """
    )
    tags = {line.split("\t")[0] for line in (doc / "tags").read_text().splitlines()}
    commands = {c for c in done["data"]["commands"] if c.startswith("Hikmah")}
    assert len(commands) == 7
    assert {f":{c}" for c in commands} <= tags
    options = set(done["data"]["options"]) | {"socket", "recall_limit"}  # nil by default
    assert {f"hikmah-option-{o}" for o in options} <= tags
    assert {"hikmah-lazy.nvim", "hikmah-packpath", "hikmah.setup()", "hikmah-health"} <= tags
    readme = (PLUGIN / "README.md").read_text()
    for command in commands:
        assert f":{command}" in readme or f"]{command}" in readme
