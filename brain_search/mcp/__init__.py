"""The MCP door: the `brain_recall` server and its other tools."""
