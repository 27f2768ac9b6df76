"""Real SQL dumps made on the servers of this machine (PostgreSQL 127.0.0.1:5432 and MariaDB
127.0.0.1:3306): a scratch database is created, filled, dumped with pg_dump / mysqldump and
dropped again. Shared by the ingest and the build tests."""

from __future__ import annotations

import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

CUSTOMERS = [
    (1, "O'Brien, Siobhán", "sio@example.com", "tab\there\nnew line \\ back"),
    (2, 'Zoë "Z" Müller', None, None),
    (3, "李雷", "li@example.cn", "unicode ✓"),
]
ORDERS = [
    (1, 1, "pending", 19.99, 0, "2024-03-05 09:00:00"),
    (2, 1, "shipped", 1234.5, 1, "2024-03-06 12:00:00"),
    (3, 3, "delivered", 0.01, None, None),
]
ITEMS = [
    (1, 1, "SKU-001", 2, 9.99),
    (1, 2, "0042", 1, 0.01),
    (2, 1, "SKU-XL", 10, 123.45),
    (3, 1, "SKU-001", 1, 0.01),
]
PG_SCHEMA = """
CREATE TYPE order_status AS ENUM ('pending','shipped','delivered','cancelled');
CREATE TABLE customers (id serial PRIMARY KEY, name character varying(100) NOT NULL,
  email text UNIQUE, note text, created_at timestamp with time zone);
CREATE TABLE orders (id serial PRIMARY KEY, customer_id integer NOT NULL REFERENCES customers(id),
  status order_status NOT NULL, total numeric(10,2), paid boolean, placed_at timestamp);
CREATE TABLE order_items (order_id integer REFERENCES orders(id), line_no integer,
  sku varchar(20), qty integer, price numeric(8,2), PRIMARY KEY (order_id, line_no));
INSERT INTO customers (name,email,note,created_at) VALUES
 ('O''Brien, Siobhán','sio@example.com',E'tab\\there\\nnew line \\\\ back','2024-03-01 10:00:00+00'),
 ('Zoë "Z" Müller',NULL,NULL,'2024-03-02 11:30:00+00'), ('李雷','li@example.cn','unicode ✓',NULL);
INSERT INTO orders (customer_id,status,total,paid,placed_at) VALUES
 (1,'pending',19.99,false,'2024-03-05 09:00:00'), (1,'shipped',1234.50,true,'2024-03-06 12:00:00'),
 (3,'delivered',0.01,NULL,NULL);
INSERT INTO order_items VALUES (1,1,'SKU-001',2,9.99),(1,2,'0042',1,0.01),(2,1,'SKU-XL',10,123.45),
 (3,1,'SKU-001',1,0.01);
"""
MY_SCHEMA = """
CREATE TABLE customers (id int AUTO_INCREMENT PRIMARY KEY, name varchar(100) NOT NULL,
  email varchar(200) UNIQUE, note text, created_at datetime) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
CREATE TABLE orders (id int AUTO_INCREMENT PRIMARY KEY, customer_id int NOT NULL,
  status enum('pending','shipped','delivered') NOT NULL, total decimal(10,2), paid tinyint(1),
  placed_at timestamp NULL, CONSTRAINT fk_c FOREIGN KEY (customer_id) REFERENCES customers(id))
  ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
CREATE TABLE order_items (order_id int NOT NULL, line_no int NOT NULL, sku varchar(20), qty int,
  price decimal(8,2), PRIMARY KEY (order_id, line_no), KEY idx_sku (sku),
  CONSTRAINT fk_o FOREIGN KEY (order_id) REFERENCES orders(id)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
INSERT INTO customers (name,email,note,created_at) VALUES
 ('O\\'Brien, Siobhán','sio@example.com','tab\\there\\nnew line \\\\ back','2024-03-01 10:00:00'),
 ('Zoë "Z" Müller',NULL,NULL,'2024-03-02 11:30:00'), ('李雷','li@example.cn','unicode ✓',NULL);
INSERT INTO orders (customer_id,status,total,paid,placed_at) VALUES
 (1,'pending',19.99,0,'2024-03-05 09:00:00'), (1,'shipped',1234.50,1,'2024-03-06 12:00:00'),
 (3,'delivered',0.01,NULL,NULL);
INSERT INTO order_items VALUES (1,1,'SKU-001',2,9.99),(1,2,'0042',1,0.01),(2,1,'SKU-XL',10,123.45),
 (3,1,'SKU-001',1,0.01);
"""


def _run(args: list[str], stdin: str | None = None) -> str:
    done = subprocess.run(args, input=stdin, capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise RuntimeError(f"{args[0]} failed: {done.stderr.strip()}")
    return done.stdout


def pg_dump_of(tmp_path: Path, schema: str = "") -> Path:
    """A pg_dump plain dump of a database made from ``schema`` (default: the shop)."""
    schema = schema or PG_SCHEMA
    if not shutil.which("pg_dump") or not shutil.which("psql"):
        pytest.skip("PostgreSQL client tools (psql, pg_dump) are not installed")
    base = ["-h", "127.0.0.1", "-p", "5432", "-U", "root"]
    try:
        _run(["psql", *base, "-d", "postgres", "-tAc", "SELECT 1"])
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"PostgreSQL on 127.0.0.1:5432 is unreachable: {exc}")
    name = f"aw_byod_{uuid.uuid4().hex[:10]}"
    _run(["createdb", *base, name])
    try:
        _run(["psql", *base, "-d", name, "-v", "ON_ERROR_STOP=1", "-q"], schema)
        dump = tmp_path / "shop_pg.sql"
        dump.write_text(_run(["pg_dump", "--no-owner", *base, name]), encoding="utf-8")
    finally:
        _run(["dropdb", *base, "--if-exists", name])
    return dump


def mysql_dump_of(tmp_path: Path, schema: str = "") -> Path:
    """A mysqldump of a database made from ``schema`` (default: the shop)."""
    schema = schema or MY_SCHEMA
    client = shutil.which("mariadb") or shutil.which("mysql")
    dumper = shutil.which("mariadb-dump") or shutil.which("mysqldump")
    if not client or not dumper:
        pytest.skip("MariaDB/MySQL client tools are not installed")
    base = ["-h", "127.0.0.1", "-P", "3306", "-u", "root"]
    try:
        _run([client, *base, "-e", "SELECT 1"])
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"MariaDB on 127.0.0.1:3306 is unreachable: {exc}")
    name = f"aw_byod_{uuid.uuid4().hex[:10]}"
    _run([client, *base, "-e", f"CREATE DATABASE {name} CHARACTER SET utf8mb4"])
    try:
        _run([client, *base, name], schema)
        dump = tmp_path / "shop_my.sql"
        dump.write_text(_run([dumper, *base, name]), encoding="utf-8")
    finally:
        _run([client, *base, "-e", f"DROP DATABASE IF EXISTS {name}"])
    return dump
