"""Uploaded files: stored under AW_STORAGE_ROOT/uploads/<uuid>/, probed before any job is
queued, and removed once the build ends (success or final failure).

The probe is `environments.discovery.sources.probe_file(path, max_bytes=...)`: content-sniffed
format, emptiness, size, archive safety and a bounded parse, so a file that parses to nothing is
refused with 400 before a job is queued.
"""

from __future__ import annotations

import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings

from environments.discovery import sources

from .request import BuildRequestError, default_name


def uploads_root() -> Path:
    return Path(settings.STORAGE_ROOT) / "uploads"


def max_upload_bytes() -> int:
    return int(getattr(settings, "AW_MAX_UPLOAD_BYTES", 200 * 1024 * 1024))


def supported_suffixes() -> tuple[str, ...]:
    """File names an upload may carry (the ingest stage reads the content, not the name)."""
    return sources.SUPPORTED_SUFFIXES


def _suffix(filename: str) -> str:
    name = filename.lower()
    for compound in (".tar.gz", ".tar.bz2", ".tar.xz"):
        if name.endswith(compound):
            return compound
    return Path(name).suffix


def check_name_and_size(filename: str, size: int | None) -> None:
    """The checks that need no bytes: a supported type, not empty, not over the limit."""
    if not filename:
        raise BuildRequestError("the upload has no file name")
    suffix = _suffix(filename)
    allowed = supported_suffixes()
    if suffix not in allowed:
        raise BuildRequestError(
            f"{filename}: unsupported file type {suffix or '(none)'}; "
            f"supported: {', '.join(allowed)}"
        )
    if size is not None and size <= 0:
        raise BuildRequestError(f"{filename}: the file is empty")
    limit = max_upload_bytes()
    if size is not None and size > limit:
        raise BuildRequestError(f"{filename}: file too large ({size} bytes; limit {limit} bytes)")


@dataclass(frozen=True)
class StoredUpload:
    directory: Path
    path: Path
    filename: str  # the original name
    size: int


def store_upload(chunks: Any, filename: str) -> StoredUpload:
    """Write the file to uploads/<uuid>/<safe name><suffix>, refusing it past the size limit.

    `chunks` is an iterable of bytes (an UploadedFile's .chunks(), or a file read in blocks).
    """
    original = Path(filename).name
    check_name_and_size(original, None)
    suffix = _suffix(original)
    stem = original[: -len(suffix)] if suffix else original
    directory = uploads_root() / uuid.uuid4().hex
    directory.mkdir(parents=True)
    path = directory / f"{default_name(stem)}{suffix}"
    limit, size = max_upload_bytes(), 0
    try:
        with open(path, "wb") as out:
            for chunk in chunks:
                size += len(chunk)
                if size > limit:
                    raise BuildRequestError(
                        f"{original}: file too large (over the limit of {limit} bytes)"
                    )
                out.write(chunk)
        check_name_and_size(original, size)
    except BaseException:
        shutil.rmtree(directory, ignore_errors=True)
        raise
    return StoredUpload(directory, path, original, size)


def store_local_file(path: str | Path) -> StoredUpload:
    """A copy of a local file (the CLI), so the build's cleanup never touches the original."""
    path = Path(path)
    if not path.is_file():
        raise BuildRequestError(f"{path}: no such file")
    check_name_and_size(path.name, path.stat().st_size)

    def blocks():
        with open(path, "rb") as handle:
            while block := handle.read(1024 * 1024):
                yield block

    return store_upload(blocks(), path.name)


def remove_upload(directory: str | Path) -> bool:
    """Remove one upload directory, and only one directly under uploads_root()."""
    if not directory:
        return False
    directory = Path(directory)
    root = uploads_root().resolve()
    try:
        resolved = directory.resolve()
    except OSError:
        return False
    if resolved.parent != root or not resolved.is_dir():
        return False
    shutil.rmtree(resolved, ignore_errors=True)
    return True


@dataclass(frozen=True)
class ProbeResult:
    format: str
    tables: int | None
    rows: int | None
    detail: str = ""


def probe_upload(path: Path, filename: str | None = None) -> ProbeResult:
    """Refuse a file the build could not ingest, before a job is queued (BuildRequestError)."""
    name = filename or path.name
    try:
        probe = sources.probe_file(path, max_bytes=max_upload_bytes())
    except sources.SourceError as exc:
        raise BuildRequestError(_named(name, path, str(exc))) from exc
    except Exception as exc:  # a parser bug must not become a 500
        raise BuildRequestError(f"{name}: cannot be read ({type(exc).__name__}: {exc})") from exc
    if not probe.tables or not probe.records:
        raise BuildRequestError(f"{name}: the file parses to no rows")
    return ProbeResult(probe.format, probe.tables, probe.records, probe.detail)


def _named(name: str, path: Path, message: str) -> str:
    """`message` led by the upload's name once: source readers already lead with the stored
    file's name, which is the upload's own or a stored alias of it."""
    for lead in (f"{name}: ", f"{path.name}: "):
        if message.startswith(lead):
            return f"{name}: {message[len(lead) :]}"
    return f"{name}: {message}"
