"""What survived each step of a build, per environment and summed over many builds.

Every build records its stages on `Environment.build_yield` (environments.builder.stages); a
theme build also records a `funnel`. This module reads both into one shape for the environment
page, the API (`yield_funnel`, `GET /api/environments/yield/`) and the console's yield page:
theme tools -> schema entities -> tools implemented -> tools verified -> tasks synthesized
(tasks are synthesized after the build; the count is the environment's own).
"""

from __future__ import annotations

from typing import Any

FUNNEL = (
    "theme_tools",
    "schema_entities",
    "tools_implemented",
    "tools_verified",
    "tasks_synthesized",
)
LABELS = {
    "theme_tools": "theme tools",
    "schema_entities": "schema entities",
    "tools_implemented": "tools implemented",
    "tools_verified": "tools verified",
    "tasks_synthesized": "tasks synthesized",
}


def origin_of(build_yield: dict[str, Any]) -> str:
    ingest = build_yield.get("ingest") or {}
    if ingest.get("release_env_id"):
        return "agent_world"
    if "theme_tools" in ingest:
        return f"theme ({ingest.get('source_kind') or 'theme'})"
    if ingest.get("complexified_from"):
        return "complexified"
    if ingest.get("files"):
        return "upload"
    if ingest:
        return "built-in source"
    return "unrecorded"


def funnel_of(environment: Any) -> dict[str, Any]:
    """The five counts for one environment (None where the build did not reach or record it)."""
    data = environment.build_yield if isinstance(environment.build_yield, dict) else {}
    recorded = data.get("funnel") or {}
    schema = data.get("schema") or {}
    tools = data.get("tools") or {}
    verify = data.get("verify") or {}
    out = {
        "origin": origin_of(data),
        "theme_tools": recorded.get("theme_tools"),
        "schema_entities": recorded.get("schema_entities", schema.get("tables")),
        "tools_implemented": recorded.get("tools_implemented", tools.get("generated")),
        "tools_verified": recorded.get("tools_verified", verify.get("verified")),
        "tasks_synthesized": environment.task_count if data else None,
    }
    if out["tools_verified"] is None and verify:
        out["tools_verified"] = verify.get("verified")
    return out


def yield_summary(environments) -> dict[str, Any]:
    """Sums over builds, per origin and overall, with the share surviving each step."""
    groups: dict[str, dict[str, Any]] = {}
    rows = environments.select_related(None).only("id", "status", "build_yield", "task_count")
    for environment in rows.iterator(chunk_size=500):
        counts = funnel_of(environment)
        if counts["origin"] == "unrecorded":
            continue
        for key in (counts["origin"], "all"):
            group = groups.setdefault(
                key, {"builds": 0, "published": 0, "rejected": 0, **{k: 0 for k in FUNNEL}}
            )
            group["builds"] += 1
            group["published"] += environment.status in ("verified", "retired")
            group["rejected"] += environment.status == "rejected"
            for step in FUNNEL:
                group[step] += counts[step] or 0
    for group in groups.values():
        first = group["theme_tools"] or group["schema_entities"]
        group["verified_share"] = (
            round(group["tools_verified"] / group["tools_implemented"], 3)
            if group["tools_implemented"]
            else None
        )
        group["theme_tool_share"] = (
            round(group["tools_verified"] / group["theme_tools"], 3)
            if group["theme_tools"]
            else None
        )
        group["first_step"] = first
    return {"steps": list(FUNNEL), "origins": groups}
