"""A sync device's id as text: ``hd`` and 26 base32 letters, a fingerprint of its public
key (:func:`hikmah.sync.device.device_id` derives it).

Its shape alone is checked here: by sync, where a name in the folder may be one, and
by the wire, where a request names one.
"""

from __future__ import annotations

import re

DEVICE_ID = re.compile(r"hd[a-z2-7]{26}")


def is_device_id(text: str) -> bool:
    """Whether ``text`` has the shape of a device id (a safe directory name too)."""
    return DEVICE_ID.fullmatch(text) is not None
