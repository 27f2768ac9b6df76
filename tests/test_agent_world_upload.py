"""An Agent-World release sent to the API or the New environment page as an archive (never a
server-side path): unpacked safely under the upload's folder, read by the release reader, and
started as one catalogue run; refused with the reader's or the extractor's words (400) when it
is not a safe archive of a release; reviewers only."""

from __future__ import annotations

import io
import json
import tarfile
import zipfile
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from environments.agent_world.release import read_environment
from environments.models import CatalogueRun
from tests.support.agent_world_release import LIBRARY, write_release, write_small_release

BUILD = "/api/environments/build/"
GOOD, OTHER, BROKEN = "0300000", "0400000", "0500000"


@pytest.fixture
def storage(settings, tmp_path):
    settings.STORAGE_ROOT = tmp_path / "storage"
    return settings.STORAGE_ROOT


def tar_gz(folder: Path, arcname: str) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        archive.add(folder, arcname=arcname)
    return buffer.getvalue()


def zip_of(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def upload(name: str, data: bytes) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, data, content_type="application/octet-stream")


def uploads(storage: Path) -> list[Path]:
    root = storage / "uploads"
    return sorted(root.iterdir()) if root.is_dir() else []


@pytest.mark.django_db
def test_a_release_archive_starts_one_catalogue_run(storage, tmp_path, reviewer_api):
    release = write_small_release(tmp_path / "checkout", good=(GOOD, OTHER), broken=(BROKEN,))
    sent = upload("Agent-World-main.tar.gz", tar_gz(release.parent, "Agent-World-main"))
    answer = reviewer_api.post(BUILD, {"release": sent}, format="multipart")
    assert answer.status_code == 202, answer.content
    body = answer.json()
    run = CatalogueRun.objects.get(pk=body["catalogue_run"])
    assert body["id"] == run.job_id and body["kind"] == "environments.build_directory"
    assert body["environments"] == 3
    assert [p.split(": ", 1)[0] for p in body["problems"]] == [f"environment {BROKEN}"]
    source = Path(run.source)
    assert source.name == "environment_mix" and (storage / "uploads").resolve() in source.parents
    assert (source / GOOD / "tides.json").is_file()
    assert not list(source.parents[2].glob("*.tar.gz"))  # the archive itself is gone
    assert run.selection == {"agent_world": True, "env_ids": []}


@pytest.mark.django_db
def test_one_environment_sent_flat_is_laid_out_as_a_release_of_one(storage, tmp_path, reviewer_api):
    mix = write_release(tmp_path / "checkout")
    files = {p.name: p.read_bytes() for p in (mix / LIBRARY).iterdir()}
    files[f"{LIBRARY}_step4_checkpoint.json"] = (
        mix / f"{LIBRARY}_step4_checkpoint.json"
    ).read_bytes()
    files[f"{LIBRARY}.json"] = (mix / "questions" / f"{LIBRARY}.json").read_bytes()
    sent = upload("library.zip", zip_of(files))
    answer = reviewer_api.post(BUILD, {"release": sent, "env": LIBRARY}, format="multipart")
    assert answer.status_code == 202, answer.content
    run = CatalogueRun.objects.get(pk=answer.json()["catalogue_run"])
    assert run.selection["env_ids"] == [LIBRARY]
    environment = read_environment(run.source, LIBRARY)
    assert len(environment.collections) == 5 and len(environment.questions) == 2
    assert "Business rules" in environment.readme


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("name", "data", "words"),
    [
        (
            "broken.zip",
            zip_of({f"{BROKEN}_step4_checkpoint.json": b"{not json", "rows.json": b"[]"}),
            f"broken.zip: no environment of the release can be imported: environment {BROKEN}: "
            f"checkpoint {BROKEN}_step4_checkpoint.json: not JSON (line 1, column 2",
        ),
        (
            "notes.zip",
            zip_of({"notes/readme.json": b"{}"}),
            "notes.zip: not an Agent-World release: no environment_mix/ folder",
        ),
        ("release.json", b"{}", "release.json: an Agent-World release is sent as a zip or tar"),
        ("release.zip", b"not a zip at all", "release.zip: not a zip or tar archive"),
    ],
)
def test_a_bad_release_is_refused_with_its_words_and_leaves_nothing(
    storage, reviewer_api, name, data, words
):
    answer = reviewer_api.post(BUILD, {"release": upload(name, data)}, format="multipart")
    assert answer.status_code == 400, answer.content
    assert answer.json()["error"].startswith(words), answer.json()["error"]
    assert uploads(storage) == [] and not CatalogueRun.objects.exists()


@pytest.mark.django_db
def test_traversal_links_and_unknown_ids_are_refused(storage, tmp_path, reviewer_api):
    escaping = io.BytesIO()
    with tarfile.open(fileobj=escaping, mode="w:gz") as archive:
        data = json.dumps([{"id": 1}]).encode()
        member = tarfile.TarInfo("environment_mix/../../escaped.json")
        member.size = len(data)
        archive.addfile(member, io.BytesIO(data))
    answer = reviewer_api.post(
        BUILD, {"release": upload("evil.tar.gz", escaping.getvalue())}, format="multipart"
    )
    assert answer.status_code == 400
    assert "escapes the archive (..)" in answer.json()["error"]
    assert (
        not (storage / "escaped.json").exists() and not (storage.parent / "escaped.json").exists()
    )

    linked = io.BytesIO()
    with tarfile.open(fileobj=linked, mode="w:gz") as archive:
        link = tarfile.TarInfo(f"environment_mix/{GOOD}/tides.json")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        archive.addfile(link)
    answer = reviewer_api.post(
        BUILD, {"release": upload("linked.tar.gz", linked.getvalue())}, format="multipart"
    )
    assert answer.status_code == 400 and "is a link" in answer.json()["error"]

    release = write_small_release(tmp_path / "checkout", good=(GOOD,))
    sent = upload("r.tar.gz", tar_gz(release, "environment_mix"))
    answer = reviewer_api.post(BUILD, {"release": sent, "env": "0900000"}, format="multipart")
    assert answer.status_code == 400
    assert answer.json()["error"] == "the release has no environment '0900000'"
    sent = upload("r.tar.gz", tar_gz(release, "environment_mix"))
    answer = reviewer_api.post(BUILD, {"release": sent, "name": "mine"}, format="multipart")
    assert answer.status_code == 400 and "keep their own names" in answer.json()["error"]
    assert uploads(storage) == [] and not CatalogueRun.objects.exists()


@pytest.mark.django_db
def test_only_reviewers_may_send_a_release(storage, tmp_path, viewer_api, client, viewer):
    from rest_framework.test import APIClient

    release = write_small_release(tmp_path / "checkout", good=(GOOD,))
    data = tar_gz(release, "environment_mix")
    answer = viewer_api.post(BUILD, {"release": upload("r.tar.gz", data)}, format="multipart")
    assert answer.status_code == 403
    assert "needs the reviewer role" in str(answer.json())
    anonymous = APIClient().post(BUILD, {"release": upload("r.tar.gz", data)}, format="multipart")
    assert anonymous.status_code in (401, 403)
    client.force_login(viewer)
    page = client.post(reverse("environment-new"), {"release": upload("r.tar.gz", data)})
    assert page.status_code == 403
    assert uploads(storage) == [] and not CatalogueRun.objects.exists()


@pytest.mark.django_db
def test_the_new_environment_page_takes_a_release_and_shows_its_run(
    storage, tmp_path, client, reviewer
):
    client.force_login(reviewer)
    form = client.get(reverse("environment-new")).content.decode()
    assert 'name="release"' in form and "Agent-World release" in form
    release = write_small_release(tmp_path / "checkout", good=(GOOD, OTHER))
    sent = upload("r.tar.gz", tar_gz(release, "environment_mix"))
    answer = client.post(reverse("environment-new"), {"release": sent, "env": f"{GOOD}, {OTHER}"})
    run = CatalogueRun.objects.get()
    assert answer.status_code == 302 and answer.url == reverse("catalogue-run", args=[run.pk])
    assert run.selection["env_ids"] == [GOOD, OTHER]
    bad = client.post(
        reverse("environment-new"), {"release": upload("x.zip", zip_of({"a.json": b"[]"}))}
    )
    assert bad.status_code == 400
    assert "x.zip: not an Agent-World release" in bad.content.decode()
