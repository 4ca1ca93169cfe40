"""Settings for every test of the run."""

from __future__ import annotations

import os
from pathlib import Path

# A model's built graph depends on its installed weights alone: one cache for the whole
# run (and the next), so that each store and daemon a test starts does not build its own
# (a few seconds each). Children (hikmahd, the CLI) inherit it.
os.environ.setdefault(
    "HIKMAH_MODEL_CACHE", str(Path(__file__).resolve().parents[1] / ".cache" / "models")
)
