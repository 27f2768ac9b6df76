"""Limits on what a user's data file may be: size, width, archive shape. All configurable."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    """Bounds checked by `probe_file` before a build is queued and again while ingesting.

    - max_bytes: largest single input file (and largest archive member once unpacked).
    - max_columns: widest table the JSON adapter writes; wider objects are reshaped (sparse
      option maps -> key/value child tables) or refused naming the JSON path.
    - max_csv_columns: widest CSV/TSV/HTML table accepted (flat formats cannot be reshaped).
    - max_members: most files an archive may hold.
    - max_unpacked_bytes: total uncompressed size of an archive's members.
    - max_ratio: largest compression ratio (uncompressed / compressed) before an archive is
      treated as a zip bomb; only checked once a member or the total passes `ratio_floor` bytes.
    - probe_bytes: prefix read by the probe of line-oriented formats (CSV, JSONL, SQL, HTML).
    - probe_sql_bytes: largest SQL script the probe reads whole with the build's own reader (in a
      scratch in-memory database), so it refuses what the build would refuse; a larger script is
      read that way up to this many bytes and its remaining rows are counted by streaming.
    """

    max_bytes: int = 100 * 1024 * 1024
    max_columns: int = 64
    max_csv_columns: int = 1000
    max_members: int = 64
    max_unpacked_bytes: int = 512 * 1024 * 1024
    max_ratio: int = 100
    ratio_floor: int = 1024 * 1024
    probe_bytes: int = 1024 * 1024
    probe_sql_bytes: int = 8 * 1024 * 1024


DEFAULT_LIMITS = Limits()
