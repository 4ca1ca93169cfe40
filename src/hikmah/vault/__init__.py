"""Encryption at rest: the vault's keys and the sealing of what the store keeps."""
