"""Dependencies point one way: aw_site <- environments <- tasks <- training | serving <- arena.

Every module's imports are parsed (top-level and inside functions alike), and so are model look-ups
by name (`apps.get_model("arena", "FailureLabel")`, a way round an import); each one reaching an
app at the same rank or above is a failure that names the file, the line and what it reached.
Only aw_site's URL wiring and the main-job command may reach every app.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Rank of each app: an app may import apps of a lower rank only (its own app aside).
LAYERS: dict[str, int] = {
    "aw_site": 0,
    "environments": 1,
    "tasks": 2,
    "training": 3,
    "serving": 3,
    "arena": 4,
}
# The wiring that must know every app: URL tables and the command that runs the whole loop.
EXEMPT = {
    "aw_site/urls.py",
    "aw_site/api_urls.py",
    "aw_site/console_urls.py",
    "aw_site/management/commands/run_embedded.py",
}


@dataclass(frozen=True)
class Violation:
    path: str
    line: int
    imported: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line} imports {self.imported}"


def imported_modules(source: str) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import statement, nested ones included, and of
    every model looked up by its app's name (`get_model("app", "Model")`, `get_model("app.M")`)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.Call) and _called_name(node.func) == "get_model" and node.args:
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                found.append((node.lineno, first.value))
    return found


def _called_name(func: ast.expr) -> str:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def violations_in(path: str, source: str) -> list[Violation]:
    """Imports of `source` (a module at `path`, relative to the root) against the direction."""
    app = path.split("/", 1)[0]
    if app not in LAYERS or path in EXEMPT:
        return []
    found = []
    for line, module in imported_modules(source):
        target = module.split(".", 1)[0]
        if target in LAYERS and target != app and LAYERS[target] >= LAYERS[app]:
            found.append(Violation(path, line, module))
    return found


def project_modules() -> list[Path]:
    return sorted(
        path
        for app in LAYERS
        if (ROOT / app).is_dir()
        for path in (ROOT / app).rglob("*.py")
        if "migrations" not in path.parts
    )


def test_every_app_imports_only_the_layers_below_it():
    modules = project_modules()
    assert len(modules) > 100, "the layering check found too few modules to mean anything"
    found = [
        violation
        for path in modules
        for violation in violations_in(path.relative_to(ROOT).as_posix(), path.read_text())
    ]
    assert not found, "imports against the direction:\n" + "\n".join(map(str, found))


@pytest.mark.parametrize(
    ("path", "source", "expected"),
    [
        ("environments/views.py", "from tasks.models import Task\n", ["tasks.models"]),
        ("tasks/privacy.py", "def f():\n    from arena.models import X\n", ["arena.models"]),
        ("training/views.py", "import serving.episode_api\n", ["serving.episode_api"]),
        ("serving/mcp_server.py", "from training import rollout\n", ["training"]),
        ("aw_site/views.py", "from arena.models import EvolutionRound\n", ["arena.models"]),
        ("arena/views.py", "from training.models import Policy\nfrom . import x\n", []),
        ("tasks/reward.py", "from environments.runtime import state\n", []),
        ("aw_site/console_urls.py", "from arena import views\n", []),
        ("tasks/models.py", "from tasks.records import x\nimport json\n", []),
        ("tasks/api.py", "apps.get_model('training', 'Policy')\n", ["training"]),
        ("training/api.py", "get_model('arena.FailureLabel')\n", ["arena.FailureLabel"]),
        ("arena/steps.py", "apps.get_model('training', 'Policy')\n", []),
    ],
)
def test_the_check_catches_imports_against_the_direction(path, source, expected):
    assert [v.imported for v in violations_in(path, source)] == expected
