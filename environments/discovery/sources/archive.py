"""Zip and tar(.gz/.bz2/.xz) archives of data files, unpacked safely into a temp folder.

Refused before anything is written: absolute member paths, `..` traversal, symlinks, hardlinks,
devices and FIFOs, encrypted members, nested archives, more than `max_members` files, a declared
total above `max_unpacked_bytes`, a member above `max_bytes`, and a compression ratio above
`max_ratio` (a zip bomb). While extracting, bytes are counted again: a member that expands past
what it declared, or past the limits, stops the extraction.
"""

from __future__ import annotations

import os
import stat
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from .base import SourceError
from .limits import DEFAULT_LIMITS, Limits

_CHUNK = 1024 * 1024
_IGNORED = ("__MACOSX/", ".DS_Store", "Thumbs.db")
_ARCHIVE_SUFFIXES = (".zip", ".tar", ".tgz", ".gz", ".bz2", ".xz", ".tbz2", ".txz")


@dataclass
class Member:
    name: str  # the member's path inside the archive, as written there
    size: int  # declared uncompressed size
    compressed: int  # declared compressed size (zip) or 0 (tar)


def _safe_name(archive: str, raw: str) -> str | None:
    """The member's relative POSIX path, None for folders/OS junk; SourceError if unsafe."""
    name = raw.replace("\\", "/")
    if name.startswith("/") or (len(name) > 1 and name[1] == ":") or name.startswith("//"):
        raise SourceError(f"{archive}: member {raw!r} has an absolute path")
    parts = [p for p in PurePosixPath(name).parts if p not in ("", ".")]
    if ".." in parts:
        raise SourceError(f"{archive}: member {raw!r} escapes the archive (..)")
    if not parts or name.endswith("/"):
        return None
    clean = "/".join(parts)
    if clean.startswith(_IGNORED) or parts[-1] in _IGNORED or parts[-1].startswith("._"):
        return None
    if any(ord(ch) < 32 for ch in clean):
        raise SourceError(f"{archive}: member {raw!r} has control characters in its name")
    return clean


def _check_totals(archive: str, members: list[Member], archive_size: int, limits: Limits) -> None:
    if len(members) > limits.max_members:
        raise SourceError(
            f"{archive}: more than {limits.max_members} files in the archive ({len(members)})"
        )
    total = 0
    for member in members:
        if member.size > limits.max_bytes:
            raise SourceError(
                f"{archive}:{member.name}: unpacks to {member.size} bytes, "
                f"more than the {limits.max_bytes}-byte limit"
            )
        if (
            member.compressed
            and member.size > limits.ratio_floor
            and member.size / member.compressed > limits.max_ratio
        ):
            raise SourceError(
                f"{archive}:{member.name}: compression ratio "
                f"{member.size // member.compressed}:1 is above {limits.max_ratio}:1 "
                "(refused as a possible zip bomb)"
            )
        total += member.size
        if total > limits.max_unpacked_bytes:
            raise SourceError(
                f"{archive}: unpacks to more than {limits.max_unpacked_bytes} bytes "
                "(refused as a possible zip bomb)"
            )
    if total > limits.ratio_floor and total / max(archive_size, 1) > limits.max_ratio:
        raise SourceError(
            f"{archive}: compression ratio {total // max(archive_size, 1)}:1 is above "
            f"{limits.max_ratio}:1 (refused as a possible zip bomb)"
        )


def _zip_members(path: Path, zf: zipfile.ZipFile) -> list[tuple[Member, zipfile.ZipInfo]]:
    out = []
    for info in zf.infolist():
        mode = info.external_attr >> 16
        if stat.S_ISLNK(mode):
            raise SourceError(f"{path.name}: member {info.filename!r} is a symlink")
        if stat.S_IFMT(mode) and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            raise SourceError(f"{path.name}: member {info.filename!r} is not a regular file")
        if info.flag_bits & 0x1:
            raise SourceError(f"{path.name}: member {info.filename!r} is encrypted")
        name = _safe_name(path.name, info.filename)
        if name is None or info.is_dir():
            continue
        out.append((Member(name, info.file_size, info.compress_size), info))
    return out


def _tar_members(path: Path, tf: tarfile.TarFile, limits: Limits):
    out = []
    total = 0
    for info in tf:  # lazily: a bomb is stopped as soon as the declared total passes the limit
        if info.issym() or info.islnk():
            raise SourceError(f"{path.name}: member {info.name!r} is a link")
        if info.isdev() or not (info.isfile() or info.isdir()):
            raise SourceError(f"{path.name}: member {info.name!r} is not a regular file")
        name = _safe_name(path.name, info.name)
        if name is None or info.isdir():
            continue
        out.append((Member(name, info.size, 0), info))
        total += info.size
        if len(out) > limits.max_members or total > limits.max_unpacked_bytes:
            break  # _check_totals names the reason
    return out


def list_archive(path: Path, kind: str, limits: Limits = DEFAULT_LIMITS) -> list[Member]:
    """The archive's data members after every check that needs no extraction."""
    path = Path(path)
    try:
        if kind == "zip":
            with zipfile.ZipFile(path) as zf:
                members = [m for m, _ in _zip_members(path, zf)]
        else:
            with tarfile.open(path, "r:*") as tf:
                members = [m for m, _ in _tar_members(path, tf, limits)]
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError) as exc:
        raise SourceError(f"{path.name}: damaged or unreadable archive ({exc})") from exc
    _check_totals(path.name, members, path.stat().st_size, limits)
    for member in members:
        if member.name.lower().endswith(_ARCHIVE_SUFFIXES):
            raise SourceError(f"{path.name}:{member.name}: nested archives are not supported")
    if not members:
        raise SourceError(f"{path.name}: the archive holds no data files")
    return members


def extract_archive(
    path: Path, kind: str, dest: Path, limits: Limits = DEFAULT_LIMITS
) -> list[tuple[str, Path]]:
    """Unpack the archive's data members under `dest`; (member name, file) in archive order."""
    path = Path(path)
    dest = Path(dest).resolve()
    list_archive(path, kind, limits)  # every declared-size check first
    written: list[tuple[str, Path]] = []
    state = {"total": 0}
    try:
        if kind == "zip":
            with zipfile.ZipFile(path) as zf:
                for member, info in _zip_members(path, zf):
                    with zf.open(info) as source:
                        written.append(
                            (member.name, _copy(path, member, source, dest, limits, state))
                        )
        else:
            with tarfile.open(path, "r:*") as tf:
                for member, info in _tar_members(path, tf, limits):
                    source = tf.extractfile(info)
                    if source is None:
                        raise SourceError(f"{path.name}: member {member.name!r} is unreadable")
                    with source:
                        written.append(
                            (member.name, _copy(path, member, source, dest, limits, state))
                        )
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError) as exc:
        raise SourceError(f"{path.name}: damaged or unreadable archive ({exc})") from exc
    archive_size = max(path.stat().st_size, 1)
    if state["total"] > limits.ratio_floor and state["total"] / archive_size > limits.max_ratio:
        raise SourceError(
            f"{path.name}: compression ratio {state['total'] // archive_size}:1 is above "
            f"{limits.max_ratio}:1 (refused as a possible zip bomb)"
        )
    return written


def _copy(archive: Path, member: Member, source, dest: Path, limits: Limits, state) -> Path:
    target = (dest / member.name).resolve()
    if dest not in target.parents:
        raise SourceError(f"{archive.name}: member {member.name!r} escapes the archive")
    target.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    with os.fdopen(os.open(target, flags, 0o600), "wb") as out:
        while chunk := source.read(_CHUNK):
            count += len(chunk)
            state["total"] += len(chunk)
            if count > member.size or count > limits.max_bytes:
                raise SourceError(
                    f"{archive.name}:{member.name}: expands past its declared size or the "
                    f"{limits.max_bytes}-byte limit (refused as a possible zip bomb)"
                )
            if state["total"] > limits.max_unpacked_bytes:
                raise SourceError(
                    f"{archive.name}: unpacks to more than {limits.max_unpacked_bytes} bytes "
                    "(refused as a possible zip bomb)"
                )
            if count > limits.ratio_floor and member.compressed:
                if count / member.compressed > limits.max_ratio:
                    raise SourceError(
                        f"{archive.name}:{member.name}: compression ratio above "
                        f"{limits.max_ratio}:1 (refused as a possible zip bomb)"
                    )
            out.write(chunk)
    return target
