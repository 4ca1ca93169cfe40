"""``python -m hikmah_browse`` is ``hikmah browse``."""

import sys

from hikmah_cli.__main__ import main

sys.exit(main(["browse", *sys.argv[1:]]))
