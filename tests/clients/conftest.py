from tests.daemon.conftest import daemon, short_tmp, words_daemon

__all__ = ["daemon", "short_tmp", "words_daemon"]
