"""The vocabulary of memory: types, errors, paths and pure helpers that any client may import.

Nothing here loads LMDB or NumPy: the CLI, browse and the agent's MCP server import
these modules without the store."""
