"""The store: the LMDB environment, every write through the rules, and sync's store side."""
