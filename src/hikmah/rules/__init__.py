"""The write operations and every rule they must pass, in one place (docs/security.md,
"Provenance rules").

An operation (:mod:`.operations`) is what a writer asks the store for;
:func:`.writes.payloads_for` checks it against the store as the writer's batch
sees it and returns the ledger payloads it becomes, or raises the typed error
that says why not. What a trace must be whoever wrote it, checked from the
trace alone, is :mod:`.checks`: every device also runs it on the traces other
devices send it. Whatever path a write takes (RPC, import, promotion,
prediction), it comes through here, so a rule cannot be forgotten on one of them.
"""
