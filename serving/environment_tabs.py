"""The environment page's MCP tab: how an outside agent connects to this environment.

It belongs to serving (the MCP server and `serve_mcp` live here), so serving registers it when
it loads (`ServingConfig.ready`) and the environment page renders it without importing serving.
"""

from __future__ import annotations

import json
from typing import Any

from environments.models import Environment
from environments.page_tabs import register_tab


def mcp_tab(request, environment: Environment) -> dict[str, Any]:
    """The stdio command and the streamable-HTTP URL, with client configurations to copy."""
    http_url = request.build_absolute_uri(f"/mcp/{environment.name}/")
    stdio_config = {
        "mcpServers": {
            environment.name: {
                "command": "python",
                "args": ["manage.py", "serve_mcp", environment.name],
            }
        }
    }
    http_config = {"mcpServers": {environment.name: {"url": http_url}}}
    return {
        "mcp_http_url": http_url,
        "mcp_stdio_command": f"python manage.py serve_mcp {environment.name}",
        "mcp_stdio_config": json.dumps(stdio_config, indent=2),
        "mcp_http_config": json.dumps(http_config, indent=2),
    }


def register_environment_tabs() -> None:
    register_tab("mcp", "MCP", mcp_tab, "environments/tabs/mcp.html", position=60)
