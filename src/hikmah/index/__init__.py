"""The store's layout and the indexes derived from the ledger, read through snapshots."""
