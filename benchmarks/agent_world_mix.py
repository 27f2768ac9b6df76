"""A seeded release of environments in the Agent-World format, for the import benchmark.

    .venv/bin/python benchmarks/agent_world_mix.py OUT [--environments 60] [--seed 7]

Writes OUT/environment_mix/: per environment a folder of JSON collections (a parent and a
child collection of rows, sometimes a settings document, a tag collection without ids or a
request log), a README with the schema and business rules, a `<env_id>_step4_checkpoint.json`
with metadata, taxonomy and tool schemas whose `implementation` is Python source that reads and
rewrites the files under MCP_DB_DIR, and `questions/<env_id>.json`.

The hazards real releases carry are drawn per environment: the database folder read when the
code loads or at each call; writes that stamp the clock (`datetime.utcnow()`, `time.time()`)
and make ids from uuid4; a log collection appended to on every call, reads included; errors as
`{"error": {...}}`, `{"found": false}` or raised; `_load` helpers that swallow errors;
`**_extra`; fields a write adds; non-ASCII text written without an encoding. Some tools are
broken on purpose, each one way: code that does not parse, code that raises while loading, a
tool that needs the network, one that always raises, a read that writes, a write that does not
persist, a read whose answer depends on the process clock.

Questions: a read chain (parent's children, then one child), a write chain (a new child:
stamped and with a fresh id, so its reference reproduces only with volatile fields aside) and
sometimes one that does not reproduce (a changed reference, or a chain through a broken tool).
Reference answers are what the chain returns when this generator runs the tool code itself on
a scratch copy, under the real clock and real uuids, as the release's authors recorded theirs.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DOMAINS = [
    # (parents, parent, children, child, category field and values, measure, statuses, L1, L2)
    ("clinics", "clinic", "appointments", "appointment", "region", "fee", "booked done missed",
     "Health & Medicine", "Clinical Scheduling"),
    ("vessels", "vessel", "voyages", "voyage", "flag", "cargo_tonnes", "planned sailing docked",
     "Transport & Logistics", "Shipping"),
    ("libraries", "library", "loans", "loan", "district", "days", "active returned lost",
     "Education", "Libraries"),
    ("farms", "farm", "harvests", "harvest", "province", "kilograms", "planned picked sold",
     "Agriculture", "Crop Management"),
    ("studios", "studio", "sessions", "session", "city", "minutes", "open held cancelled",
     "Media & Entertainment", "Music Production"),
    ("warehouses", "warehouse", "shipments", "shipment", "zone", "pallets", "queued sent held",
     "Commerce & Retail", "Inventory"),
    ("teams", "team", "matches", "match", "league", "score", "scheduled played abandoned",
     "Sports", "League Management"),
    ("hotels", "hotel", "bookings", "booking", "country", "nights", "held paid cancelled",
     "Travel & Hospitality", "Lodging"),
    ("labs", "lab", "samples", "sample", "campus", "volume_ml", "received tested discarded",
     "Science & Research", "Laboratory Management"),
    ("stations", "station", "readings", "reading", "basin", "level_cm", "raw checked flagged",
     "Weather & Geospatial", "Hydrology"),
]  # fmt: skip
NAMES = [
    "Åsa", "Bruno", "Chen Wei", "Dúnia", "Émile", "Føroyar", "Gül", "Håkon", "Íñigo", "Jürgen",
    "Kōji", "Łucja", "Mãe", "Nuño", "Oğuz", "Påls", "Quỳnh", "Renée", "Søren", "Tomás",
    "東京", "서울", "Zoë", "Ælfric", "Ödön", "Şule", "Ýmir", "Đorđe", "Ñandú", "Ōsaka",
]  # fmt: skip
PLACES = ["Malmö", "Sevilla", "上海", "Kraków", "São Paulo", "Reykjavík", "Zürich", "Ñuñoa"]
BROKEN = (
    "syntax_error",
    "raises_on_load",
    "needs_network",
    "always_raises",
    "read_that_writes",
    "write_that_does_not_persist",
    "process_clock",
)


@dataclass
class Plan:
    """What one environment holds and which hazards it carries."""

    env_id: str
    domain: tuple
    load_time_dir: bool
    logs: bool
    error_style: str  # dict | found | raise
    settings: bool
    tags: bool
    broken: list[str] = field(default_factory=list)

    @property
    def parents(self) -> str:
        return self.domain[0]

    @property
    def parent(self) -> str:
        return self.domain[1]

    @property
    def children(self) -> str:
        return self.domain[2]

    @property
    def child(self) -> str:
        return self.domain[3]


# --- tool sources -------------------------------------------------------------------------------


def prelude(plan: Plan) -> str:
    """The helpers at the top of every tool's code: where the files are, _load, _save, _log."""
    where = (
        'DB_DIR = os.environ["MCP_DB_DIR"]\n\n\ndef _dir():\n    return DB_DIR\n'
        if plan.load_time_dir
        else 'def _dir():\n    return os.environ.get("MCP_DB_DIR") or "/app/database"\n'
    )
    log = (
        "def _log(tool):\n"
        '    rows = _load("request_logs.json")\n'
        '    rows.append({"id": "req_" + uuid.uuid4().hex[:12], "tool": tool,\n'
        '                 "at": datetime.utcnow().isoformat() + "Z"})\n'
        '    _save("request_logs.json", rows)\n'
        if plan.logs
        else "def _log(tool):\n    return None\n"
    )
    return (
        "import json\nimport os\nimport time\nimport uuid\nfrom datetime import datetime\n\n"
        + where
        + "\n\ndef _load(name):\n    try:\n        with open(os.path.join(_dir(), name)) as f:\n"
        "            return json.load(f)\n    except Exception:\n        return []\n\n\n"
        "def _save(name, data):\n    with open(os.path.join(_dir(), name), 'w') as f:\n"
        "        json.dump(data, f, ensure_ascii=False, indent=1)\n\n\n" + log
    )


def not_found(plan: Plan, what: str, key: str) -> str:
    if plan.error_style == "dict":
        return (
            f'    return {{"error": {{"code": "NOT_FOUND", "message": "no {what} " + str({key})}}}}'
        )
    if plan.error_style == "found":
        return '    return {"found": False}'
    return f'    raise KeyError("no {what} " + str({key}))'


def tools_of(plan: Plan, rng: random.Random) -> list[tuple[str, str, dict, str]]:
    """(name, description, parameters, implementation) of every tool of the environment."""
    p, ps, c, cs = plan.parent, plan.parents, plan.child, plan.children
    category, measure, statuses = plan.domain[4], plan.domain[5], plan.domain[6].split()
    head = prelude(plan)
    string = {"type": "string"}
    tools = [
        (
            f"list_{ps}",
            f"List {ps}, optionally of one {category}.",
            schema({category: string, "limit": {"type": "integer", "minimum": 1}}, []),
            head + f"\n\ndef list_{ps}({category}=None, limit=50, **_extra):\n"
            f'    _log("list_{ps}")\n'
            f'    rows = [r for r in _load("{ps}.json") if {category} is None '
            f'or r.get("{category}") == {category}]\n'
            f'    return {{"{ps}": rows[:limit], "total": len(rows)}}\n',
        ),
        (
            f"get_{p}",
            f"One {p} by id.",
            schema({f"{p}_id": string}, [f"{p}_id"]),
            head + f"\n\ndef get_{p}({p}_id, **_extra):\n"
            f'    _log("get_{p}")\n'
            f'    for row in _load("{ps}.json"):\n'
            f'        if row["id"] == {p}_id:\n'
            + (
                f'            return {{"found": True, "{p}": row}}\n'
                if plan.error_style == "found"
                else "            return row\n"
            )
            + not_found(plan, p, f"{p}_id")
            + "\n",
        ),
        (
            f"list_{cs}_for_{p}",
            f"The {cs} of one {p}.",
            schema({f"{p}_id": string}, [f"{p}_id"]),
            head + f"\n\ndef list_{cs}_for_{p}({p}_id, **_extra):\n"
            f'    _log("list_{cs}_for_{p}")\n'
            f'    rows = [r for r in _load("{cs}.json") if r.get("{p}_id") == {p}_id]\n'
            f'    return {{"{cs}": rows, "count": len(rows)}}\n',
        ),
        (
            f"get_{c}",
            f"One {c} by id.",
            schema({f"{c}_id": string}, [f"{c}_id"]),
            head + f"\n\ndef get_{c}({c}_id, **_extra):\n"
            f'    _log("get_{c}")\n'
            f'    for row in _load("{cs}.json"):\n'
            f'        if row["id"] == {c}_id:\n'
            f'            return {{"{c}": row}}\n' + not_found(plan, c, f"{c}_id") + "\n",
        ),
        (
            f"create_{c}",
            f"Record a new {c} for a {p}.",
            schema({f"{p}_id": string, measure: {"type": "number"}}, [f"{p}_id", measure]),
            head + f"\n\ndef create_{c}({p}_id, {measure}, **_extra):\n"
            f'    _log("create_{c}")\n'
            f'    if not any(r["id"] == {p}_id for r in _load("{ps}.json")):\n'
            + not_found(plan, p, f"{p}_id").replace("    ", "        ", 1)
            + "\n"
            f'    rows = _load("{cs}.json")\n'
            f'    row = {{"id": "{c[:3]}_" + uuid.uuid4().hex[:10], "{p}_id": {p}_id,\n'
            f'           "{measure}": {measure}, "status": "{statuses[0]}",\n'
            '           "created_at": datetime.utcnow().replace(microsecond=0).isoformat() + "Z",\n'
            '           "created_ts": int(time.time())}\n'
            "    rows.append(row)\n"
            f'    _save("{cs}.json", rows)\n'
            f'    return {{"{c}": row}}\n',
        ),
        (
            f"update_{c}_status",
            f"Move a {c} to another status ({' -> '.join(statuses)}).",
            schema(
                {f"{c}_id": string, "status": {"type": "string", "enum": statuses[1:]}},
                [f"{c}_id", "status"],
            ),
            head + f"\n\ndef update_{c}_status({c}_id, status, **_extra):\n"
            f'    _log("update_{c}_status")\n'
            f'    rows = _load("{cs}.json")\n'
            "    for row in rows:\n"
            f'        if row["id"] == {c}_id:\n'
            '            row["status"] = status\n'
            '            row["updated_at"] = datetime.utcnow().isoformat()\n'
            f'            _save("{cs}.json", rows)\n'
            f'            return {{"{c}": row}}\n' + not_found(plan, c, f"{c}_id") + "\n",
        ),
    ]
    if plan.settings:
        tools.append(
            (
                "get_settings",
                "The environment's settings.",
                schema({}, []),
                head + '\n\ndef get_settings(**_extra):\n    _log("get_settings")\n'
                '    with open(os.path.join(_dir(), "settings.json")) as f:\n'
                "        return json.load(f)\n",
            )
        )
    if plan.tags:
        tools.append(
            (
                f"tag_{p}",
                f"Tag a {p}.",
                schema({f"{p}_id": string, "tag": string}, [f"{p}_id", "tag"]),
                head + f'\n\ndef tag_{p}({p}_id, tag, **_extra):\n    _log("tag_{p}")\n'
                '    rows = _load("tags.json")\n'
                f'    rows.append({{"{p}_id": {p}_id, "tag": tag}})\n'
                '    _save("tags.json", rows)\n'
                f'    return {{"tagged": {p}_id, "tag": tag}}\n',
            )
        )
    for kind in plan.broken:
        tools.append(broken_tool(kind, plan, head))
    return tools


def broken_tool(kind: str, plan: Plan, head: str) -> tuple[str, str, dict, str]:
    """A tool broken one way (see the module docstring); its name says what it claims to do."""
    p, ps, c, cs = plan.parent, plan.parents, plan.child, plan.children
    key = schema({f"{p}_id": {"type": "string"}}, [f"{p}_id"])
    if kind == "syntax_error":
        return (f"renew_{c}", f"Renew a {c}.", key, f"def renew_{c}({p}_id:\n    return {{}}\n")
    if kind == "raises_on_load":
        return (
            f"convert_{p}_fee",
            "Convert a fee.",
            key,
            'import json\n\nRATES = json.loads("{not json")\n\n\n'
            f"def convert_{p}_fee({p}_id, **_extra):\n    return RATES\n",
        )
    if kind == "needs_network":
        return (
            f"fetch_{p}_photo",
            f"A {p}'s photo.",
            key,
            f"def fetch_{p}_photo({p}_id, **_extra):\n    import urllib.request\n"
            '    with urllib.request.urlopen("http://photos.example.org/" + '
            f"{p}_id, timeout=2) as r:\n"
            '        return {"photo": r.read().decode()}\n',
        )
    if kind == "always_raises":
        return (
            f"audit_{p}",
            f"Audit a {p}.",
            key,
            head
            + f'\n\ndef audit_{p}({p}_id, **_extra):\n    raise RuntimeError("auditor offline")\n',
        )
    if kind == "read_that_writes":
        return (
            f"get_{p}_views",
            f"How often a {p} was viewed.",
            key,
            head + f"\n\ndef get_{p}_views({p}_id, **_extra):\n"
            f'    rows = _load("{ps}.json")\n'
            "    for row in rows:\n"
            f'        if row["id"] == {p}_id:\n'
            '            row["views"] = row.get("views", 0) + 1\n'
            f'            _save("{ps}.json", rows)\n'
            '            return {"views": row["views"]}\n'
            '    return {"views": 0}\n',
        )
    if kind == "write_that_does_not_persist":
        return (
            f"archive_{c}",
            f"Archive a {c}.",
            schema({f"{c}_id": {"type": "string"}}, [f"{c}_id"]),
            head + f"\n\ndef archive_{c}({c}_id, **_extra):\n"
            f'    rows = _load("{cs}.json")\n'
            f'    row = next((r for r in rows if r["id"] == {c}_id), None)\n'
            f'    return {{"archived": {c}_id, "was": row}}\n',
        )
    return (
        f"list_{ps}_live",
        f"The {ps}, with the server's clock.",
        schema({}, []),
        head + f"\n\ndef list_{ps}_live(**_extra):\n"
        f'    return {{"{ps}": _load("{ps}.json"), "cpu_ns": time.process_time_ns()}}\n',
    )


def schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required}


# --- data ------------------------------------------------------------------------------------


def collections_of(plan: Plan, rng: random.Random) -> dict[str, Any]:
    p, c = plan.parent, plan.child
    category, measure, statuses = plan.domain[4], plan.domain[5], plan.domain[6].split()
    places = rng.sample(PLACES, 4)
    parents = [
        {
            "id": f"{p[:3]}_{i:03d}",
            "name": f"{rng.choice(NAMES)} {plan.parent.title()} {i}",
            category: rng.choice(places),
            "capacity": rng.randint(2, 40),
        }
        for i in range(1, rng.randint(5, 14) + 1)
    ]
    children = [
        {
            "id": f"{c[:3]}_{i:04d}",
            f"{p}_id": rng.choice(parents)["id"],
            measure: round(rng.uniform(1, 500), 2),
            "status": rng.choice(statuses),
            "created_at": f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T09:00:00Z",
            "note": rng.choice(["", "über", "café", "naïve", "日本語", "ok"]),
        }
        for i in range(1, rng.randint(10, 40) + 1)
    ]
    found = {f"{plan.parents}.json": parents, f"{plan.children}.json": children}
    if plan.settings:
        found["settings.json"] = {
            "currency": rng.choice(["EUR", "SEK", "JPY"]),
            "greeting": "¡Hola!",
        }
    if plan.tags:
        found["tags.json"] = [{f"{p}_id": parents[0]["id"], "tag": "première"}]
    if plan.logs:
        found["request_logs.json"] = []
    return found


def readme_of(plan: Plan, files: dict[str, Any]) -> str:
    statuses = plan.domain[6].split()
    lines = [f"# {plan.parents.title()} and their {plan.children}", "", "## Collections"]
    for name, data in files.items():
        if isinstance(data, list) and data:
            lines.append(f"- {name[:-5]}: {', '.join(data[0])}")
        else:
            lines.append(f"- {name[:-5]}: one document" if isinstance(data, dict) else f"- {name}")
    lines += [
        "",
        "## Business rules",
        f"- A {plan.child} moves {' -> '.join(statuses)}.",
        f"- Every {plan.child} belongs to one {plan.parent}.",
    ]
    return "\n".join(lines) + "\n"


# --- questions: chains run on a scratch copy, under the real clock ----------------------------


def run_chain(directory: Path, files: dict[str, Any], tools: dict[str, str], chain: list) -> Any:
    """The chain's last output, from the tool code run here on a copy of the files (this
    generator's own code, trusted: the import runs it only in the sandbox)."""
    scratch = Path(tempfile.mkdtemp(prefix="aw-mix-"))
    try:
        for name in files:
            shutil.copyfile(directory / name, scratch / name)
        os.environ["MCP_DB_DIR"] = str(scratch)
        result = None
        for step in chain:
            namespace: dict[str, Any] = {}
            exec(compile(tools[step["tool"]], step["tool"], "exec"), namespace)  # noqa: S102
            result = namespace[step["tool"]](**step["args"])
        return result
    finally:
        os.environ.pop("MCP_DB_DIR", None)
        shutil.rmtree(scratch, ignore_errors=True)


def questions_of(
    plan: Plan, files: dict[str, Any], directory: Path, tools: dict[str, str], rng: random.Random
) -> list[dict[str, Any]]:
    p, c, cs = plan.parent, plan.child, plan.children
    measure = plan.domain[5]
    children = files[f"{cs}.json"]
    child = rng.choice(children)
    parent_id = child[f"{p}_id"]
    read_chain = [
        {"tool": f"list_{cs}_for_{p}", "args": {f"{p}_id": parent_id}},
        {"tool": f"get_{c}", "args": {f"{c}_id": child["id"]}},
    ]
    write_chain = [{"tool": f"create_{c}", "args": {f"{p}_id": parent_id, measure: 12.5}}]
    found = []
    for text, chain, criteria in (
        (
            f"What is the {measure} of {c} {child['id']} of {p} {parent_id}, and its status?",
            read_chain,
            [f"gives the {measure}", "gives the status"],
        ),
        (
            f"Record a new {c} of 12.5 {measure} for {p} {parent_id}.",
            write_chain,
            [f"a new {c} exists for {parent_id}", f"its {measure} is 12.5"],
        ),
    ):
        reference = run_chain(directory, files, tools, chain)
        found.append(question(text, reference, chain, criteria))
    roll = rng.random()
    if roll < 0.3:  # a reference the chain does not give: recorded on other data
        wrong = json.loads(found[0]["reference_answer"])
        row = wrong.get(c, wrong)
        row[measure] = round(row[measure] + 1.0, 2)
        found.append(
            question(
                f"How large is {c} {child['id']}?",
                wrong,
                read_chain[1:],
                [f"gives the {measure}"],
            )
        )
    elif roll < 0.5 and plan.broken:  # a chain through a tool that will not verify
        broken = tools_of(plan, random.Random(0))[-1]
        found.append(
            question(
                f"Use {broken[0]} on {p} {parent_id}.",
                {"ok": True},
                [{"tool": broken[0], "args": {f"{p}_id": parent_id}}],
                ["says it worked"],
            )
        )
    return found


def question(text: str, reference: Any, chain: list, criteria: list[str]) -> dict[str, Any]:
    return {
        "task": text,
        "reference_answer": json.dumps(reference, ensure_ascii=False),
        "grading_rubric": {"success_criteria": criteria, "verified_tool_chain": chain},
    }


# --- the release ---------------------------------------------------------------------------------


def plan_of(index: int, rng: random.Random) -> Plan:
    plan = Plan(
        env_id=f"{(index + 1) * 1000 + 7:07d}",
        domain=DOMAINS[index % len(DOMAINS)],
        load_time_dir=rng.random() < 0.4,
        logs=rng.random() < 0.5,
        error_style=rng.choice(["dict", "found", "raise"]),
        settings=rng.random() < 0.3,
        tags=rng.random() < 0.3,
    )
    plan.broken = [kind for kind in BROKEN if rng.random() < 0.12]
    return plan


def write_release(root: str | Path, environments: int = 60, seed: int = 7) -> Path:
    """The release at root/environment_mix/; returns that folder."""
    rng = random.Random(seed)
    mix = Path(root) / "environment_mix"
    index_rows = []
    for index in range(environments):
        plan = plan_of(index, rng)
        directory = mix / plan.env_id
        directory.mkdir(parents=True, exist_ok=True)
        files = collections_of(plan, rng)
        for name, data in files.items():
            (directory / name).write_text(json.dumps(data, ensure_ascii=False, indent=1), "utf-8")
        (directory / "README.md").write_text(readme_of(plan, files), "utf-8")
        tools = tools_of(plan, rng)
        name = f"{plan.parents.title()} & {plan.children.title()} {index + 1}"
        checkpoint = {
            "index": index,
            "local_files_dir": f"./environment_mix/{plan.env_id}",
            "file_list": [f"./environment_mix/{plan.env_id}/{f}" for f in ["README.md", *files]],
            "data": {
                "ToolDesignAgent": {
                    "tool_schemas": [
                        {"name": n, "description": d, "parameters": s, "implementation": code}
                        for n, d, s, code in tools
                    ]
                }
            },
            "metadata": {
                "env_id": plan.env_id,
                "name": name,
                "description": f"{name}: a generated environment for the import benchmark.",
                "taxonomy": {
                    "L1_id": f"L1-{index % len(DOMAINS):02d}",
                    "L1_name": plan.domain[7],
                    "L2_id": f"L2-{index % len(DOMAINS):02d}",
                    "L2_name": plan.domain[8],
                    "L3_name": f"{plan.child.title()} Tracking",
                },
                "n_tools": len(tools),
                "database_dir_env_var": "MCP_DB_DIR",
            },
        }
        (mix / f"{plan.env_id}_step4_checkpoint.json").write_text(
            json.dumps(checkpoint, ensure_ascii=False, indent=1), "utf-8"
        )
        sources = {n: code for n, _, _, code in tools if n.startswith(("list_", "get_", "create_"))}
        questions = questions_of(plan, files, directory, sources, rng)
        (mix / "questions").mkdir(exist_ok=True)
        (mix / "questions" / f"{plan.env_id}.json").write_text(
            json.dumps(
                {"env_id": plan.env_id, "name": name, "tasks": questions}, ensure_ascii=False
            ),
            "utf-8",
        )
        index_rows.append({"env_id": plan.env_id, "name": name, "broken": plan.broken})
    (mix / "index.json").write_text(json.dumps(index_rows, ensure_ascii=False, indent=1), "utf-8")
    return mix


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--environments", type=int, default=60)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    mix = write_release(args.out, args.environments, args.seed)
    print(f"wrote {args.environments} environments to {mix}", file=sys.stderr)


if __name__ == "__main__":
    main()
