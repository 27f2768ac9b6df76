"""Serving episodes to outside agents: the HTTP episode API, the MCP server export (`serve_mcp`)
and the scoring of a task episode driven call by call from outside. Sits above tasks: it may
import aw_site, environments and tasks, never training or arena."""
