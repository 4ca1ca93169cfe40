-- The :Hikmah* commands. Modules load on first use, so starting the editor costs nothing.

if vim.g.loaded_hikmah then
  return
end
vim.g.loaded_hikmah = true

if vim.fn.has("nvim-0.7") ~= 1 then
  vim.notify("hikmah.nvim needs Neovim 0.7 or newer", vim.log.levels.ERROR)
  return
end

local function command(name, action, opts)
  vim.api.nvim_create_user_command(name, function(args)
    require("hikmah.commands")[action](args)
  end, opts)
end

command("HikmahRecall", "recall", {
  nargs = "*",
  range = true,
  desc = "Hikmah: recall memories (arguments, selection or word under the cursor)",
})
command("HikmahRemember", "remember", {
  nargs = "*",
  range = true,
  desc = "Hikmah: remember the selection (or the arguments, or a prompt)",
})
command("HikmahShow", "show", {
  nargs = "?",
  desc = "Hikmah: one trace and its history (the id given or under the cursor)",
})
command("HikmahCommitments", "commitments", {
  nargs = "?",
  desc = "Hikmah: the promise queue (optionally: due within N hours)",
})
command("HikmahFulfill", "fulfill", {
  nargs = "?",
  desc = "Hikmah: mark a commitment done (the id given or under the cursor)",
})
command("HikmahConflicts", "conflicts", {
  nargs = 0,
  desc = "Hikmah: claim keys with several values",
})
command("HikmahReview", "review", {
  nargs = 0,
  desc = "Hikmah: what agents wrote that waits for your review (accept, edit, reject)",
})
