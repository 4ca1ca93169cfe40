"""What tests and benchmarks run against: helpers, one definition each.

conftest.py files define fixtures only and are never imported; whatever a test or a
benchmark imports lives here, a module per job:

- ``daemon``: a real hikmahd in a short temp dir (``Running``), and the semantic
  channel's state from its status (``semantic``, ``wait_state``).
- ``sockets``: waiting for a server to listen (``wait_for_socket``), and a raw
  JSON-lines connection (``Conn``).
- ``environment``: an environment without any coding-agent variable (``clean_env``).
- ``store``: writes to a real store that must succeed (``write``, ``remember``, ...).
- ``network``: Python run in a network namespace with no network.
- ``stats``: the one ``percentile`` every figure is computed with.
- ``terminals``: a shell on a real pseudo-terminal.
- ``secret_service``: GNOME Keyring's Secret Service on a private D-Bus.
- ``hosts``: a person's machine in miniature, for the agent hosts.
- ``nvim``: headless Neovim drivers running the plugin.
- ``sync_chains``, ``sync_daemons``, ``sync_engines``: ledger chains and devices
  publishing into a folder; real daemons syncing through one; Syncthing and git.

Benchmarks put the repository root on ``sys.path`` and import from here.
"""
