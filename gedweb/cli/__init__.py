"""The gedweb agent CLI and MCP server: HTTP-only clients of the REST API."""
