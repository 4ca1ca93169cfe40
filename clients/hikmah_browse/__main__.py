"""``python -m hikmah_browse`` is ``hikmah browse``."""

import sys

from .launch import main

sys.exit(main())
