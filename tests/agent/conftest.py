from tests.daemon.conftest import daemon, short_tmp

__all__ = ["daemon", "short_tmp"]
