"""The ``hikmah`` command: a thin, stdlib-only client of hikmahd.

It starts on every shell command and agent prompt, so its hot path imports
neither trio nor msgspec nor the kernel's store: only the standard library,
:mod:`hikmah.model.paths` and the client library :mod:`hikmah_client`, which is
standard library only too.
"""
