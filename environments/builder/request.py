"""What a build is asked to do: a typed request, and the built-in sources it may name.

A `BuildRequest` names its origin (a built-in source, an uploaded file, a stored theme, or a live
MCP server given by its stdio command or URL), the environment's name, title and category, and
options. It is validated once, by `create`, before a job is queued; it travels as JSON in the
job's arguments (`as_dict`) and the worker reads it back as it was (`from_dict`).
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from functools import cache
from pathlib import Path
from typing import Any

from environments.discovery.taxonomy import is_valid, primary_of

SOURCES_FILE = Path(__file__).with_name("sources.json")
NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_]{0,59}$")
MAX_TASKS_ON_PUBLISH = 200  # options.tasks: goal tasks a published environment asks for


class BuildRequestError(ValueError):
    """The request cannot be built; the message says which field and why."""


class Origin(StrEnum):
    SOURCE = "source"  # a built-in source of sources.json
    UPLOAD = "upload"  # one uploaded file, stored under AW_STORAGE_ROOT/uploads/<uuid>/
    THEME = "theme"  # a stored theme (Theme row): its tools over a database inferred from it
    MCP = "mcp"  # a live MCP server (stdio command or URL): imported as a theme, then built
    AGENT_WORLD = "agent_world"  # one environment of a release in the Agent-World format


SUPPORTED_ORIGINS = (Origin.SOURCE, Origin.UPLOAD, Origin.THEME, Origin.MCP, Origin.AGENT_WORLD)
THEME_ORIGINS = (Origin.THEME, Origin.MCP)
OPTION_NAMES = ("threshold", "min_tools", "use_llm", "rows", "data_source", "tasks")


def theme_min_tools() -> int:
    """Verified tools a theme build needs by default (AW_THEME_MIN_TOOLS, default 3)."""
    import os

    try:
        return max(1, int(os.environ.get("AW_THEME_MIN_TOOLS", "3")))
    except ValueError:
        return 3


@dataclass(frozen=True)
class CategoryPath:
    """primary > secondary (both from the taxonomy) > tertiary (a free-form topic)."""

    primary: str
    secondary: str
    tertiary: str = ""

    @classmethod
    def parse(cls, value: str | dict | CategoryPath | None) -> CategoryPath | None:
        """From "Primary/Secondary/Tertiary" (or "Secondary" alone, or a dict); None if empty."""
        if value is None or isinstance(value, CategoryPath):
            return value
        if isinstance(value, dict):
            parts = [value.get("primary", ""), value.get("secondary", ""), value.get("tertiary")]
        else:
            parts = [p.strip() for p in str(value).split("/")]
        parts = [str(p or "").strip() for p in parts]
        if not any(parts):
            return None
        if len(parts) == 1:  # a secondary category names its primary
            try:
                parts = [primary_of(parts[0]), parts[0], ""]
            except KeyError as exc:
                raise BuildRequestError(
                    f"category {value!r}: give Primary/Secondary[/Tertiary] from the taxonomy"
                ) from exc
        if len(parts) > 3:
            raise BuildRequestError(f"category {value!r} has more than three levels")
        primary, secondary, tertiary = (parts + ["", ""])[:3]
        if not is_valid(primary, secondary):
            raise BuildRequestError(
                f"category {primary}/{secondary} is not in the taxonomy "
                "(primary and secondary must be a taxonomy pair)"
            )
        return cls(primary, secondary, tertiary[:120])

    def as_dict(self) -> dict[str, str]:
        return asdict(self)

    def __str__(self) -> str:
        return "/".join(p for p in (self.primary, self.secondary, self.tertiary) if p)


@dataclass(frozen=True)
class EnvironmentSpec:
    """The environment a build makes: its name, words, category (None: classified at the schema
    stage) and version (None: the next one on disk)."""

    name: str
    title: str
    description: str
    category: CategoryPath | None = None
    version: int | None = None


@dataclass(frozen=True)
class BuildOptions:
    threshold: float = 0.5  # a tool needs this test accuracy in the sandbox
    min_tools: int | None = None  # verified tools needed; None: 5, or AW_THEME_MIN_TOOLS (themes)
    use_llm: bool = True  # ask the configured LLM for domain tools (when one is configured)
    rows: int = 12  # theme builds: rows per table when the generator makes them
    data_source: str = ""  # theme builds: a built-in source for rows; "" = closest match; "none"
    tasks: int = 0  # goal-tier tasks to synthesize once published (environment_published)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> BuildOptions:
        data = data or {}
        unknown = set(data) - set(OPTION_NAMES)
        if unknown:
            raise BuildRequestError(f"unknown build options: {', '.join(sorted(unknown))}")
        try:
            min_tools = data.get("min_tools")
            options = cls(
                threshold=float(data.get("threshold", cls.threshold)),
                min_tools=None if min_tools in (None, "") else int(min_tools),
                use_llm=bool(data.get("use_llm", cls.use_llm)),
                rows=int(data.get("rows", cls.rows)),
                data_source=str(data.get("data_source") or "").strip(),
                tasks=int(data.get("tasks") or 0),
            )
        except (TypeError, ValueError) as exc:
            raise BuildRequestError(f"build options: {exc}") from exc
        if not 0.0 <= options.threshold <= 1.0:
            raise BuildRequestError("options.threshold must be between 0 and 1")
        if options.min_tools is not None and not 1 <= options.min_tools <= 1000:
            raise BuildRequestError("options.min_tools must be between 1 and 1000")
        if not 1 <= options.rows <= 500:
            raise BuildRequestError("options.rows must be between 1 and 500")
        if not 0 <= options.tasks <= MAX_TASKS_ON_PUBLISH:
            raise BuildRequestError(f"options.tasks must be between 0 and {MAX_TASKS_ON_PUBLISH}")
        if options.data_source not in ("", "none"):
            builtin_source(options.data_source)
        return options


@dataclass(frozen=True)
class BuildRequest:
    origin: Origin
    source: str = ""  # origin=source: the built-in source name
    files: tuple[str, ...] = ()  # origin=upload: the stored upload path(s)
    filename: str = ""  # origin=upload: the file's original name, as the user sent it
    upload_dir: str = ""  # origin=upload: AW_STORAGE_ROOT/uploads/<uuid>/, removed after the build
    theme: int = 0  # origin=theme: the Theme row's id
    mcp: str = ""  # origin=mcp: the server's stdio command line or its http(s) URL
    release: str = ""  # origin=agent_world: the release folder (a checkout or its environment_mix/)
    env_id: str = ""  # origin=agent_world: the environment's id in the release
    name: str = ""  # the environment name (a slug); default: the source or the file's stem
    title: str = ""
    description: str = ""
    category: CategoryPath | None = None  # default: the source's, or classified after ingest
    options: BuildOptions = field(default_factory=BuildOptions)

    # --- construction -------------------------------------------------------------------

    @classmethod
    def for_source(cls, source: str, **fields: Any) -> BuildRequest:
        return cls.create(origin=Origin.SOURCE, source=source, **fields)

    @classmethod
    def for_upload(cls, files: list[str], filename: str, upload_dir: str, **fields: Any):
        return cls.create(
            origin=Origin.UPLOAD,
            files=tuple(files),
            filename=filename,
            upload_dir=upload_dir,
            **fields,
        )

    @classmethod
    def for_theme(cls, theme: int, theme_name: str = "", **fields: Any) -> BuildRequest:
        if theme_name and not fields.get("name"):
            fields["name"] = default_name(theme_name)
        return cls.create(origin=Origin.THEME, theme=theme, **fields)

    @classmethod
    def for_mcp(cls, server: str, **fields: Any) -> BuildRequest:
        return cls.create(origin=Origin.MCP, mcp=server, **fields)

    @classmethod
    def for_agent_world(cls, release: str, env_id: str, **fields: Any) -> BuildRequest:
        """One environment of a release; refused here when the release or the id is not there
        (every other malformation is the ingest stage's to name)."""
        from environments.agent_world.release import (
            CHECKPOINT_SUFFIX,
            ReleaseError,
            check_env_id,
            mix_directory,
        )

        try:
            mix = mix_directory(release)
            check_env_id(env_id)
        except ReleaseError as exc:
            raise BuildRequestError(str(exc)) from exc
        if not (mix / f"{env_id}{CHECKPOINT_SUFFIX}").is_file() and not (mix / env_id).is_dir():
            raise BuildRequestError(f"the release at {mix} has no environment {env_id!r}")
        fields.setdefault("name", default_name(f"aw_{env_id}"))
        return cls.create(
            origin=Origin.AGENT_WORLD, release=str(Path(release).resolve()), env_id=env_id, **fields
        )

    @classmethod
    def create(cls, **fields: Any) -> BuildRequest:
        """A validated request with defaults filled in from the built-in source or the file."""
        try:
            origin = Origin(fields.pop("origin"))
        except (KeyError, ValueError) as exc:
            raise BuildRequestError(
                f"origin must be one of {', '.join(o.value for o in SUPPORTED_ORIGINS)}"
            ) from exc
        if origin not in SUPPORTED_ORIGINS:
            raise BuildRequestError(f"origin {origin.value!r} is not supported yet")
        category = CategoryPath.parse(fields.pop("category", None))
        options = BuildOptions.from_dict(fields.pop("options", None))
        text = {k: str(fields.pop(k, "") or "").strip() for k in ("name", "title", "description")}
        source = str(fields.pop("source", "") or "").strip()
        files = tuple(str(f) for f in fields.pop("files", ()) or ())
        filename = str(fields.pop("filename", "") or "")
        upload_dir = str(fields.pop("upload_dir", "") or "")
        theme = fields.pop("theme", 0) or 0
        mcp = str(fields.pop("mcp", "") or "").strip()
        release = str(fields.pop("release", "") or "").strip()
        env_id = str(fields.pop("env_id", "") or "").strip()
        if fields:
            raise BuildRequestError(f"unknown request fields: {', '.join(sorted(fields))}")
        if origin == Origin.SOURCE:
            spec = builtin_source(source)
            text["name"] = text["name"] or spec["name"]
            text["title"] = text["title"] or spec["title"]
            text["description"] = text["description"] or spec["description"]
            category = category or CategoryPath.parse(spec["category"])
            if files:
                raise BuildRequestError("a built-in source build takes no files")
        elif origin == Origin.AGENT_WORLD:
            if source or files or theme or mcp:
                raise BuildRequestError("a released environment is its own origin")
            if not release or not env_id:
                raise BuildRequestError("an Agent-World build needs the release and the env id")
            text["name"] = text["name"] or default_name(f"aw_{env_id}")
            # title and description default to the release's, read by the ingest stage
        elif origin in THEME_ORIGINS:
            if source:
                raise BuildRequestError("give a theme, an MCP server or a built-in source, not two")
            if origin == Origin.THEME:
                try:
                    theme = int(theme)
                except (TypeError, ValueError) as exc:
                    raise BuildRequestError(f"theme {theme!r} is not a theme id") from exc
                if theme < 1:
                    raise BuildRequestError("a theme build needs the theme's id")
                text["name"] = text["name"] or f"theme_{theme}"
            else:
                mcp_target(mcp)  # refuses what cannot be an MCP server
                text["name"] = text["name"] or default_name(mcp_stem(mcp))
            # title and description default to the theme's, read when the build starts
        else:
            if source:
                raise BuildRequestError("give a built-in source or a file, not both")
            if not files:
                raise BuildRequestError("an upload build needs the stored file")
            stem = Path(filename or files[0]).stem
            text["name"] = text["name"] or default_name(stem)
            text["title"] = text["title"] or stem.replace("_", " ").replace("-", " ").title()
            text["description"] = (
                text["description"] or f"Built from the uploaded file {filename or stem}."
            )
        if not NAME_PATTERN.match(text["name"]):
            raise BuildRequestError(
                f"name {text['name']!r}: lower-case letters, digits and underscores, starting "
                "with a letter, at most 60 characters"
            )
        if len(text["title"]) > 200:
            raise BuildRequestError("title: at most 200 characters")
        if origin not in THEME_ORIGINS and (theme or mcp):
            raise BuildRequestError("a theme or an MCP server is its own origin")
        return cls(
            origin=origin,
            source=source,
            files=files,
            filename=filename,
            upload_dir=upload_dir,
            theme=int(theme) if origin == Origin.THEME else 0,
            mcp=mcp if origin == Origin.MCP else "",
            release=release if origin == Origin.AGENT_WORLD else "",
            env_id=env_id if origin == Origin.AGENT_WORLD else "",
            name=text["name"],
            title=text["title"],
            description=text["description"][:2000],
            category=category,
            options=options,
        )

    # --- JSON round trip (job arguments) ------------------------------------------------

    def as_dict(self) -> dict[str, Any]:
        return {
            "origin": self.origin.value,
            "source": self.source,
            "files": list(self.files),
            "filename": self.filename,
            "upload_dir": self.upload_dir,
            "theme": self.theme,
            "mcp": self.mcp,
            "release": self.release,
            "env_id": self.env_id,
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "category": self.category.as_dict() if self.category else None,
            "options": asdict(self.options),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BuildRequest:
        """The request `as_dict` wrote, as it was validated before it was queued (no second
        validation: a theme or file that vanished meanwhile fails the stage that reads it)."""
        category = data.get("category")
        return cls(
            origin=Origin(data["origin"]),
            source=data.get("source", ""),
            files=tuple(data.get("files", ())),
            filename=data.get("filename", ""),
            upload_dir=data.get("upload_dir", ""),
            theme=int(data.get("theme") or 0),
            mcp=data.get("mcp", ""),
            release=data.get("release", ""),
            env_id=data.get("env_id", ""),
            name=data["name"],
            title=data.get("title", ""),
            description=data.get("description", ""),
            category=CategoryPath(**category) if category else None,
            options=BuildOptions(**(data.get("options") or {})),
        )

    # --- what the stages read -----------------------------------------------------------

    @property
    def datasets(self) -> list[str]:
        return list(builtin_source(self.source)["datasets"]) if self.origin == Origin.SOURCE else []

    @property
    def target(self) -> str:
        """The job's target label."""
        if self.origin == Origin.SOURCE:
            return f"source:{self.source}"
        if self.origin == Origin.THEME:
            return f"theme:{self.theme}"
        if self.origin == Origin.MCP:
            return f"mcp:{self.mcp}"[:200]
        if self.origin == Origin.AGENT_WORLD:
            return f"agent_world:{self.env_id}"
        return f"upload:{self.filename or Path(self.files[0]).name}"

    @property
    def min_tools(self) -> int:
        """Verified tools the environment needs (the option, else the origin's default)."""
        if self.options.min_tools is not None:
            return self.options.min_tools
        if self.origin == Origin.AGENT_WORLD:
            return 1  # a released environment is as its authors made it: some have two tools
        return theme_min_tools() if self.origin in THEME_ORIGINS else 5

    def environment_spec(self, version: int | None = None) -> EnvironmentSpec:
        """The environment the stages build for this request."""
        return EnvironmentSpec(self.name, self.title, self.description, self.category, version)

    def spec(self, category: CategoryPath | None = None) -> dict[str, Any]:
        """The request as the draft row's theme records it (JSON)."""
        chosen = category or self.category
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "category": chosen.as_dict() if chosen else {},
            "datasets": self.datasets,
            "files": list(self.files),
        }


def mcp_target(server: str) -> str | list[str]:
    """An MCP server as import_mcp_server takes it: the URL, or the command as a list."""
    import shlex

    server = (server or "").strip()
    if not server:
        raise BuildRequestError("an MCP build needs the server's command or URL")
    if len(server) > 1000:
        raise BuildRequestError("the MCP server command or URL is longer than 1000 characters")
    if server.startswith(("http://", "https://")):
        return server
    if "://" in server:
        raise BuildRequestError(f"{server!r}: an MCP URL must be http(s)")
    try:
        command = shlex.split(server)
    except ValueError as exc:
        raise BuildRequestError(f"MCP command {server!r}: {exc}") from exc
    if not command:
        raise BuildRequestError("an MCP build needs the server's command or URL")
    return command


def mcp_stem(server: str) -> str:
    """A name for a server: the token naming the package or script ("server-memory")."""
    target = mcp_target(server)
    if isinstance(target, str):
        host = re.sub(r"^https?://", "", target).split("/")[0].split(":")[0]
        return host.replace(".", "_") or "mcp_server"
    tokens = [t for t in target if not t.startswith("-")]
    named = [t for t in tokens if "mcp" in t.lower() or "server" in t.lower()]
    chosen = (named or tokens[-1:] or ["mcp_server"])[-1]
    return Path(chosen.rstrip("/")).name.split("@")[0] or "mcp_server"


def default_name(stem: str) -> str:
    """A valid environment name from a file's stem ("My Data-2024.csv" -> my_data_2024)."""
    name = re.sub(r"[^a-z0-9]+", "_", stem.lower()).strip("_")
    if not name or not name[0].isalpha():
        name = f"upload_{name}".rstrip("_")
    return name[:60].rstrip("_")


# --- built-in sources (data, in sources.json) -----------------------------------------------


@cache
def builtin_sources() -> tuple[dict[str, Any], ...]:
    """The built-in sources, as data: name, title, description, category, datasets."""
    data = json.loads(SOURCES_FILE.read_text(encoding="utf-8"))
    sources = tuple(data["sources"])
    for spec in sources:
        category = spec["category"]
        if not is_valid(category["primary"], category["secondary"]):
            raise ValueError(f"{SOURCES_FILE.name}: {spec['name']}: {category} not in taxonomy")
        spec.setdefault("files", [])
    return sources


def builtin_names() -> list[str]:
    return [spec["name"] for spec in builtin_sources()]


def builtin_source(name: str) -> dict[str, Any]:
    for spec in builtin_sources():
        if spec["name"] == name:
            return dict(spec)
    raise BuildRequestError(f"unknown source {name!r}; known sources: {', '.join(builtin_names())}")
