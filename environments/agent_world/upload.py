"""An uploaded archive of an Agent-World release, unpacked safely and checked by the reader.

The API and the console never take a server-side path (it would let a user read any folder the
server can): they take an archive (zip or tar, optionally gzip/bzip2/xz) of a release checkout,
of its `environment_mix/`, or of one environment's files with its checkpoint and questions.
It is unpacked under the upload's own folder in AW_STORAGE_ROOT by the data uploads' safe
extractor (discovery/sources/archive.py: no absolute or `..` member, no link or device, bounded
members, sizes and compression ratio), laid out as a release, and every environment is read by
the reader (release.py). An archive none of whose environments reads is refused with the
reader's words; one whose some do goes on, the others rejected by their builds with theirs.
"""

from __future__ import annotations

import dataclasses
import shutil
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from environments.discovery.sources.archive import extract_archive
from environments.discovery.sources.base import SourceError
from environments.discovery.sources.limits import DEFAULT_LIMITS, Limits

from .release import (
    CHECKPOINT_SUFFIX,
    MIX_FOLDER,
    QUESTIONS_FOLDER,
    README,
    ReleaseError,
    check_env_id,
    environment_ids,
    read_environment,
)

ARCHIVE_SUFFIXES = (".zip", ".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz")
UNPACKED = "release"  # the folder under the upload's directory the archive unpacks into
MAX_PROBLEMS_SHOWN = 5


def release_limits() -> Limits:
    """A release holds many small files: more members than a data archive, the same guards.
    AW_MAX_RELEASE_MEMBERS (default 20000), AW_MAX_RELEASE_UNPACKED_BYTES (default 2 GiB)."""
    return dataclasses.replace(
        DEFAULT_LIMITS,
        max_members=int(getattr(settings, "AW_MAX_RELEASE_MEMBERS", 20_000)),
        max_unpacked_bytes=int(
            getattr(settings, "AW_MAX_RELEASE_UNPACKED_BYTES", 2 * 1024 * 1024 * 1024)
        ),
    )


def is_release_archive_name(filename: str) -> bool:
    return filename.lower().endswith(ARCHIVE_SUFFIXES)


@dataclass(frozen=True)
class UnpackedRelease:
    mix: Path  # the environment_mix/ folder the builds read
    env_ids: tuple[str, ...]  # every environment it names
    readable: tuple[str, ...]  # those the reader reads without refusing
    problems: tuple[str, ...]  # the reader's words for the others


def unpack_release(archive: Path, filename: str, directory: Path) -> UnpackedRelease:
    """Unpack `archive` (sent as `filename`) into directory/release/ and read it; ReleaseError
    in words when it is not a safe archive of a release with a readable environment."""
    root = Path(directory) / UNPACKED
    root.mkdir(parents=True, exist_ok=False)
    kind = _archive_kind(archive, filename)
    try:
        extract_archive(archive, kind, root, release_limits())
    except SourceError as exc:
        raise ReleaseError(_named(filename, archive, str(exc))) from None
    mix = _lay_out(root, filename)
    env_ids = tuple(environment_ids(mix))
    if not env_ids:
        raise ReleaseError(f"{filename}: the release holds no environment")
    readable, problems = [], []
    for env_id in env_ids:
        try:
            read_environment(mix, env_id)
        except ReleaseError as exc:
            problems.append(str(exc))
        else:
            readable.append(env_id)
    if not readable:
        shown = "; ".join(problems[:MAX_PROBLEMS_SHOWN])
        more = len(problems) - MAX_PROBLEMS_SHOWN
        raise ReleaseError(
            f"{filename}: no environment of the release can be imported: {shown}"
            + (f" (and {more} more)" if more > 0 else "")
        )
    return UnpackedRelease(mix, env_ids, tuple(readable), tuple(problems))


def check_env_ids(unpacked: UnpackedRelease, env_ids: list[str]) -> tuple[str, ...]:
    """The ids a submission names, each a plain name the release holds."""
    for env_id in env_ids:
        check_env_id(env_id)
        if env_id not in unpacked.env_ids:
            raise ReleaseError(f"the release has no environment {env_id!r}")
    return tuple(env_ids)


def _archive_kind(archive: Path, filename: str) -> str:
    if not is_release_archive_name(filename):
        raise ReleaseError(
            f"{filename}: an Agent-World release is sent as an archive "
            f"({', '.join(ARCHIVE_SUFFIXES)})"
        )
    try:
        if zipfile.is_zipfile(archive):
            return "zip"
        if tarfile.is_tarfile(archive):
            return "tar"
    except OSError as exc:
        raise ReleaseError(f"{filename}: cannot be read ({exc.strerror})") from None
    raise ReleaseError(f"{filename}: not a zip or tar archive")


def _lay_out(root: Path, filename: str) -> Path:
    """The environment_mix/ folder of what was unpacked: the archive's own (at its top or under
    one top folder), or one environment's flat files arranged as a release of one."""
    top = root
    entries = list(root.iterdir())
    if len(entries) == 1 and entries[0].is_dir():  # "Agent-World-main/..." or "release/..."
        top = entries[0]
    arrange_single_environment(top)
    if any(top.glob(f"*{CHECKPOINT_SUFFIX}")):
        return top
    if (top / MIX_FOLDER).is_dir():
        return top / MIX_FOLDER
    raise ReleaseError(
        f"{filename}: not an Agent-World release: no {MIX_FOLDER}/ folder and no "
        f"*{CHECKPOINT_SUFFIX} file in it"
    )


def arrange_single_environment(top: Path) -> None:
    """One environment sent flat (its checkpoint, collection files, README and questions side by
    side): moved into the release layout, <env_id>/ and questions/<env_id>.json."""
    checkpoints = list(top.glob(f"*{CHECKPOINT_SUFFIX}"))
    if len(checkpoints) != 1:
        return
    env_id = checkpoints[0].name[: -len(CHECKPOINT_SUFFIX)]
    check_env_id(env_id)
    folder = top / env_id
    if folder.exists():
        return  # already laid out as a release
    loose = [
        p
        for p in top.iterdir()
        if p.is_file() and (p.suffix == ".json" or p.name == README) and p != checkpoints[0]
    ]
    if not loose:
        return
    folder.mkdir()
    for path in loose:
        if path.name == f"{env_id}.json":  # the questions file is named for the environment
            (top / QUESTIONS_FOLDER).mkdir(exist_ok=True)
            shutil.move(path, top / QUESTIONS_FOLDER / path.name)
        else:
            shutil.move(path, folder / path.name)


def _named(filename: str, archive: Path, message: str) -> str:
    """The extractor's words led by the name the user sent, not the stored one."""
    lead = f"{archive.name}"
    return filename + message[len(lead) :] if message.startswith(lead) else f"{filename}: {message}"
