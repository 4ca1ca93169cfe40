"""What more than one client of hikmahd uses: the blocking connection with autostart,
the passphrase that proves a person present, memory framed for a coding agent, and the
renderings of times and counts every client shows alike.

Standard library only (and the kernel's stdlib-only :mod:`hikmah.model` modules), so
that the ``hikmah`` command, which imports it on every start, stays quick. It imports no
client; ``hikmah browse`` and ``hikmah-agent`` import it and never the CLI
(``tests/clients/test_import_rule.py``).
"""
