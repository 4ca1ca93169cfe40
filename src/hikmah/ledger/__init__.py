"""The ledger: the hash chain of records, their payloads, and the head file beside the store."""
