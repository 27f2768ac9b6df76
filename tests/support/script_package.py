"""A verified package built from a data file written by a test, through the build pipeline a
user's upload takes (ingest, schema, tools, sandbox verification, publish)."""

from __future__ import annotations

from typing import Any

from environments.runtime import load_package


def package_from_upload(tmp_path_factory, pool, filename: str, content: str) -> Any:
    """Write ``content`` as an upload named ``filename`` and build it into a loaded package."""
    from environments.builder.pipeline import run_pipeline
    from environments.builder.request import BuildRequest

    upload = tmp_path_factory.mktemp("upload")
    (upload / filename).write_text(content)
    request = BuildRequest.for_upload([str(upload / filename)], filename, str(upload))
    built = run_pipeline(
        request,
        root=tmp_path_factory.mktemp("envs"),
        workdir=tmp_path_factory.mktemp("work"),
        pool=pool,
    )
    assert built.path, built
    return load_package(built.path)
