// Memory from Hikmah in OpenCode: the context of `hikmah hook session-start` with a
// session's first prompt, and the memories `hikmah hook prompt` recalls for each
// prompt, added to the person's message as synthetic text parts (what Claude Code's
// additionalContext is). Its shell commands get the session id, for the stamp of
// what they write.
import { spawn } from "node:child_process"

// The shell commands, as hikmah setup writes them for Claude Code's hooks.
const HOOKS = {
  "session-start": "@SESSION_START@",
  prompt: "@PROMPT@",
}
const TIMEOUT_MS = 10000

// Run a hook command with the event as JSON on stdin, as Claude Code does; its
// additionalContext, or "" on any problem (a hook never fails the turn).
function hook(name, payload) {
  return new Promise((resolve) => {
    let out = ""
    let child
    try {
      child = spawn("/bin/sh", ["-c", HOOKS[name]], { stdio: ["pipe", "pipe", "ignore"] })
    } catch {
      return resolve("")
    }
    const timer = setTimeout(() => {
      child.kill("SIGKILL")
      resolve("")
    }, TIMEOUT_MS)
    child.stdout.on("data", (data) => {
      out += data
    })
    child.on("error", () => {
      clearTimeout(timer)
      resolve("")
    })
    child.on("close", () => {
      clearTimeout(timer)
      try {
        const text = JSON.parse(out)?.hookSpecificOutput?.additionalContext
        resolve(typeof text === "string" ? text : "")
      } catch {
        resolve("")
      }
    })
    child.stdin.on("error", () => {})
    child.stdin.end(JSON.stringify(payload))
  })
}

export const HikmahMemory = async ({ directory }) => {
  const started = new Set() // sessions given the session-start context by this process
  return {
    "chat.message": async (input, output) => {
      const own = output.parts.filter((part) => part.type === "text" && !part.synthetic)
      if (!own.length) return
      const sessionID = input.sessionID
      const base = { session_id: sessionID, cwd: directory }
      const texts = []
      if (!started.has(sessionID)) {
        started.add(sessionID)
        texts.push(await hook("session-start", { ...base, hook_event_name: "SessionStart", source: "startup" }))
      }
      const prompt = own.map((part) => part.text).join("\n")
      texts.push(await hook("prompt", { ...base, hook_event_name: "UserPromptSubmit", prompt }))
      texts.filter(Boolean).forEach((text, n) => {
        output.parts.push({
          id: `${own[0].id}hikmah${n}`,
          sessionID,
          messageID: own[0].messageID,
          type: "text",
          text,
          synthetic: true,
        })
      })
    },
    "shell.env": async (input, output) => {
      if (input.sessionID) output.env.OPENCODE_SESSION_ID = input.sessionID
    },
  }
}
