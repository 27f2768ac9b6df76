"""The import benchmark's seeded release (benchmarks/agent_world_mix.py) is in the format: every
environment reads, its planted hazards are there, its questions' references were recorded by
running the chains."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from environments.agent_world.release import environment_ids, read_environment

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from agent_world_mix import write_release  # noqa: E402


def test_the_generated_release_reads_with_its_hazards(tmp_path):
    mix = write_release(tmp_path, environments=12, seed=7)
    planted = {row["env_id"]: row["broken"] for row in json.loads((mix / "index.json").read_text())}
    assert environment_ids(mix) == sorted(planted)
    for env_id in environment_ids(mix):
        environment = read_environment(mix, env_id)
        assert len(environment.questions) >= 2 and environment.row_count >= 15
        refused = {r.name for r in environment.refused_tools}
        assert bool(refused) == ("syntax_error" in planted[env_id])  # only that one is refused
        write = next(q for q in environment.questions if q.chain[0].tool.startswith("create_"))
        created = next(iter(json.loads(write.reference_answer).values()))
        assert created["created_at"].endswith("Z") and created["created_ts"] > 0
    sources = [t.source for e in environment_ids(mix) for t in read_environment(mix, e).tools]
    assert any('DB_DIR = os.environ["MCP_DB_DIR"]' in s for s in sources)  # load-time reads
    assert any("request_logs.json" in s for s in sources)  # log-appending tools
    assert (
        write_release(tmp_path / "again", environments=12, seed=7)
        .joinpath("index.json")
        .read_text()
        == (mix / "index.json").read_text()
    )  # seeded
