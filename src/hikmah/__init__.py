"""Hikmah's kernel: traces, policy, recall, the credential detector, principal
rules and the hash-chained ledger over LMDB. Pure and synchronous."""

__version__ = "0.1.0"
