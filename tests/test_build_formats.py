"""Every accepted format, uploaded through the REST API, becomes a verified environment: on the
embedded default (in-process jobs) and on a real Celery worker with PostgreSQL and Redis; bad
uploads are refused before any job with nothing left behind."""

from __future__ import annotations

import io
import json
import sqlite3
import tarfile
import zipfile
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection

from aw_site.models import Job
from environments.models import Environment
from tests.support.dumps import mysql_dump_of, pg_dump_of
from tests.support.worker import celery_worker, redis_available, wait_for

URL = "/api/environments/build/"
RETAIL = Path(__file__).parent / "fixtures" / "byod" / "retail.json"

CITIES = [
    {
        "code": f"C{i:03d}",
        "name": f"City {i}",
        "country": "NO" if i % 2 else "SE",
        "people": 1000 + i,
    }
    for i in range(12)
]
CSV = "code,name,country,people\n" + "".join(
    f"{c['code']},{c['name']},{c['country']},{c['people']}\n" for c in CITIES
)
HTML = (
    "<html><body><h1>Cities</h1><table><tr><th>code</th><th>name</th><th>country</th>"
    "<th>people</th></tr>"
    + "".join(
        f"<tr><td>{c['code']}</td><td>{c['name']}</td><td>{c['country']}</td>"
        f"<td>{c['people']}</td></tr>"
        for c in CITIES
    )
    + "</table></body></html>"
)
SQLITE_SQL = """CREATE TABLE country (code TEXT PRIMARY KEY, name TEXT NOT NULL);
INSERT INTO country VALUES ('NO', 'Norway'), ('SE', 'Sweden'), ('DK', 'Denmark');
CREATE TABLE city (code TEXT PRIMARY KEY, name TEXT NOT NULL,
  country TEXT NOT NULL REFERENCES country(code), people INTEGER);
""" + "".join(
    f"INSERT INTO city VALUES ('{c['code']}', '{c['name']}', '{c['country']}', {c['people']});\n"
    for c in CITIES
)


STATUSES = ("pending", "shipped", "delivered", "cancelled")
ORDER_ROWS = ", ".join(
    f"({1 + i % 4}, '{STATUSES[i % 4]}', {10 + i}.50, '2024-03-{1 + i:02d} 10:00:00')"
    for i in range(16)
)
CUSTOMER_ROWS = "('Ada', 'Leeds'), ('Bo', 'York'), ('Cy O''Neil', 'Bath'), ('Dee', 'Ely')"
PG_SHOP = f"""
CREATE TABLE customers (id serial PRIMARY KEY, name varchar(80) NOT NULL, city text);
CREATE TABLE orders (id serial PRIMARY KEY, customer_id integer NOT NULL REFERENCES customers(id),
  status varchar(12) NOT NULL, total numeric(8,2) NOT NULL, placed_at timestamp NOT NULL);
INSERT INTO customers (name, city) VALUES {CUSTOMER_ROWS};
INSERT INTO orders (customer_id, status, total, placed_at) VALUES {ORDER_ROWS};
"""
MY_SHOP = f"""
CREATE TABLE customers (id int AUTO_INCREMENT PRIMARY KEY, name varchar(80) NOT NULL,
  city varchar(40)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
CREATE TABLE orders (id int AUTO_INCREMENT PRIMARY KEY, customer_id int NOT NULL,
  status enum('pending','shipped','delivered','cancelled') NOT NULL, total decimal(8,2) NOT NULL,
  placed_at datetime NOT NULL, CONSTRAINT fk_customer FOREIGN KEY (customer_id)
  REFERENCES customers(id)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
INSERT INTO customers (name, city) VALUES {CUSTOMER_ROWS};
INSERT INTO orders (customer_id, status, total, placed_at) VALUES {ORDER_ROWS};
"""


def sqlite_file(tmp_path: Path) -> bytes:
    path = tmp_path / "cities.sqlite"
    with sqlite3.connect(path) as conn:
        conn.executescript(SQLITE_SQL)
    return path.read_bytes()


def zipped(members: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in members.items():
            archive.writestr(name, text)
    return buffer.getvalue()


def tarred(members: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, text in members.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def formats(tmp_path: Path) -> dict[str, tuple[str, bytes]]:
    """(file name, bytes) of every accepted format; dumps come from the servers here."""
    countries = json.dumps([{"code": "NO", "name": "Norway"}, {"code": "SE", "name": "Sweden"}])
    return {
        "csv": ("cities.csv", CSV.encode()),
        "json_id_keyed": ("retail.json", RETAIL.read_bytes()),
        "jsonl": ("cities.jsonl", "".join(json.dumps(c) + "\n" for c in CITIES).encode()),
        "sqlite": ("cities.sqlite", sqlite_file(tmp_path)),
        "sqlite_dump": ("cities.sql", SQLITE_SQL.encode()),
        "pg_dump": ("shop_pg.sql", pg_dump_of(tmp_path, PG_SHOP).read_bytes()),
        "mysqldump": ("shop_my.sql", mysql_dump_of(tmp_path, MY_SHOP).read_bytes()),
        "html": ("cities.html", HTML.encode()),
        "zip": ("cities.zip", zipped({"cities.csv": CSV, "countries.json": countries})),
        "tar": (
            "cities.tar.gz",
            tarred({"data/cities.csv": CSV, "data/countries.json": countries}),
        ),
    }


@pytest.fixture
def storage(settings, tmp_path):
    settings.STORAGE_ROOT = tmp_path / "storage"
    settings.AW_JOBS_MODE = "thread"
    return settings.STORAGE_ROOT


def upload(client, filename: str, content: bytes, name: str):
    file = SimpleUploadedFile(filename, content, content_type="application/octet-stream")
    return client.post(URL, {"file": file, "name": name}, format="multipart")


def leftovers(storage: Path) -> list[str]:
    uploads = storage / "uploads"
    return sorted(p.name for p in uploads.iterdir()) if uploads.exists() else []


def assert_built(job_id: int, storage: Path) -> Environment:
    job = Job.objects.get(pk=job_id)
    assert job.state == "succeeded", (job.error, job.log_tail[-1500:])
    environment = Environment.objects.get(pk=job.result["environment"])
    assert environment.status == Environment.Status.VERIFIED
    assert environment.tool_count >= 5 and environment.row_count > 0
    assert (Path(environment.package_path) / "state.sqlite").is_file()
    assert environment.build_yield["verify"]["verified"] == environment.tool_count
    assert leftovers(storage) == []
    return environment


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "kind",
    [
        "csv",
        "json_id_keyed",
        "jsonl",
        "sqlite",
        "sqlite_dump",
        "pg_dump",
        "mysqldump",
        "html",
        "zip",
        "tar",
    ],
)
def test_each_format_builds_on_the_embedded_default(reviewer_api, storage, tmp_path, kind):
    filename, content = formats(tmp_path)[kind]
    response = upload(reviewer_api, filename, content, f"byod_{kind}")
    assert response.status_code == 202, response.content[:500]
    job_id = response.json()["id"]
    wait_for(lambda: Job.objects.get(pk=job_id).is_finished, timeout=180, message=kind)
    environment = assert_built(job_id, storage)
    if kind in ("pg_dump", "mysqldump", "json_id_keyed"):
        tools = {t["function"]["name"] for t in environment.manifest["tools"]}
        transitions = ("cancel_", "deliver_", "ship_", "process_")  # status lifecycle tools
        assert any(name.startswith(transitions) for name in tools), sorted(tools)
        keys = environment.build_yield["schema"]["foreign_keys"]
        assert any("order" in key.split(".")[0] for key in keys), keys


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(not redis_available(), reason="Redis is not reachable")
def test_every_format_builds_on_a_real_worker(reviewer_api, storage, tmp_path):
    if connection.vendor != "postgresql":
        pytest.skip("the worker path runs on PostgreSQL (the production stack)")
    uploads = formats(tmp_path)
    with celery_worker(tmp_path, extra_env={"AW_STORAGE_ROOT": str(storage)}) as worker:
        jobs = {}
        for kind, (filename, content) in uploads.items():
            response = upload(reviewer_api, filename, content, f"worker_{kind}")
            assert response.status_code == 202, (kind, response.content[:300])
            jobs[kind] = response.json()["id"]
        wait_for(
            lambda: all(Job.objects.get(pk=j).is_finished for j in jobs.values()),
            timeout=600,
            message=f"the builds\n{worker.log()[-3000:]}",
        )
    for kind, job_id in jobs.items():
        assert Job.objects.get(pk=job_id).worker.startswith("testworker-"), kind
        assert_built(job_id, storage)


def zip_bomb() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("big.csv", "a,b\n" + "0,0\n" * 3_000_000)  # 12 MB of zeros, ~12 KB zipped
    return buffer.getvalue()


BAD_UPLOADS = {
    "truncated json": ("broken.json", b'{"users": {"1": {"name": "Ann"'),
    "binary named csv": ("photo.csv", b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8),
    "zip bomb": ("bomb.zip", None),
    "path traversal": ("evil.zip", zipped({"../evil.csv": CSV})),
    "too large": ("big.csv", None),
    "5000 columns": ("wide.csv", None),
}


@pytest.mark.django_db
@pytest.mark.parametrize("case", list(BAD_UPLOADS))
def test_bad_uploads_are_refused_with_nothing_left(reviewer_api, storage, settings, case):
    filename, content = BAD_UPLOADS[case]
    if case == "zip bomb":
        content = zip_bomb()
    if case == "too large":  # stands for a 100 MB file: the limit is lowered, not the disk filled
        settings.AW_MAX_UPLOAD_BYTES = 64 * 1024
        content = CSV.encode() * 2_000
    if case == "5000 columns":
        header = ",".join(f"c{i}" for i in range(5000))
        content = (header + "\n" + ",".join("1" for _ in range(5000)) + "\n").encode()
    response = upload(reviewer_api, filename, content, "bad")
    assert response.status_code in (400, 413), (case, response.status_code, response.content[:300])
    assert response.json()["error"], response.json()
    assert not Job.objects.exists() and not Environment.objects.exists()
    assert leftovers(storage) == []
