"""``hikmah-agent``: Hikmah for coding agents, as a restricted MCP server over stdio."""
