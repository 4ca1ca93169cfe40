"""``hikmah browse``: a full-screen terminal inspector of memory, built on Textual.

A thin client like the others: JSON-RPC over the daemon's socket (asyncio, on
Textual's loop), no kernel store. It needs the ``browse`` extra
(``pip install 'hikmah[browse]'``); :mod:`hikmah_browse.launch` says so when it
is missing and imports nothing else before it knows.
"""
