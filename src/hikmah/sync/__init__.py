"""Sync through a folder that a file-sync engine keeps equal (docs/sync.md).

Pure and synchronous like the rest of the kernel: these modules turn a
device's ledger records into the files it publishes, check what other
devices published, and decide what to publish and apply; the daemon does the
file I/O and the timing.

- :mod:`~hikmah.sync.device`: a device's signing key and its id.
- :mod:`~hikmah.sync.segment`: segment files of ledger records.
- :mod:`~hikmah.sync.manifest`: a device's signed head.
- :mod:`~hikmah.sync.chain`: following another device's chain from what was applied.
- :mod:`~hikmah.sync.pairing`: one-time codes, invitations and join requests.
- :mod:`~hikmah.sync.envelope`: data keys sent to one device under its prekey.
- :mod:`~hikmah.sync.merge`: a trace's fate as a function of the set of facts about it.
- :mod:`~hikmah.sync.folder`: reading the folder into what the planner needs.
- :mod:`~hikmah.sync.plan`: what to publish and what to apply.
"""
