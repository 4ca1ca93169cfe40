-- The project scope of a directory, named as every Hikmah client names it
-- (hikmah.paths.project_scope): `project:<git root or the directory itself>`.

local uv = vim.uv or vim.loop

local M = {}

local function parent_of(path)
  if path == "/" then
    return nil
  end
  local parent = path:match("^(.*)/[^/]*$")
  if parent == nil then
    return nil
  end
  return parent == "" and "/" or parent
end

--- The nearest enclosing directory with a `.git` entry (file or directory), else `directory`.
---@param directory string|nil defaults to the current working directory (:lcd and :tcd count)
---@return string
function M.project_root(directory)
  directory = directory or vim.fn.getcwd()
  -- Resolved like Path.resolve() in the CLI, so a symlinked checkout gets one scope.
  directory = uv.fs_realpath(directory) or directory
  local candidate = directory
  while candidate do
    local sep = candidate == "/" and "" or "/"
    if uv.fs_stat(candidate .. sep .. ".git") then
      return candidate
    end
    candidate = parent_of(candidate)
  end
  return directory
end

---@param directory string|nil
---@return string scope `project:<root>`
function M.project_scope(directory)
  return "project:" .. M.project_root(directory)
end

return M
