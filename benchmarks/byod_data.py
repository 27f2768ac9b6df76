"""Foreign-shaped data for the bring-your-own-database benchmark, generated deterministically.

- ``retail_json(path, users)``: a nested retail document in the shape of public tool-agent
  benchmarks' retail databases: users keyed by id with payment methods keyed by id, orders
  keyed by id with nested items and fulfilments, products with variants keyed by item id.
- ``postgres_dump(path, rows)``: a real ``pg_dump`` plain dump of a shop database created on the
  local PostgreSQL server with ``generate_series`` (customers, products, orders with a status
  lifecycle, order items with a composite key), then dropped again.
"""

from __future__ import annotations

import json
import random
import subprocess
import uuid
from pathlib import Path

STATUSES = ("pending", "processing", "shipped", "delivered", "cancelled")
COLOURS = ("red", "blue", "green", "black", "white", "silver")


def retail_json(path: Path, users: int = 2400, seed: int = 7) -> Path:
    rng = random.Random(seed)
    products = {}
    for p in range(60):
        product_id = f"{rng.randrange(10**9, 10**10)}"
        variants = {}
        for _ in range(rng.randint(2, 6)):
            item_id = f"{rng.randrange(10**9, 10**10)}"
            variants[item_id] = {
                "item_id": item_id,
                "options": {"colour": rng.choice(COLOURS), "size": rng.choice("SML")},
                "available": rng.random() < 0.8,
                "price": round(rng.uniform(5, 500), 2),
            }
        products[product_id] = {
            "name": f"Product {p}",
            "product_id": product_id,
            "variants": variants,
        }
    items = [
        (pid, iid, v["price"]) for pid, p in products.items() for iid, v in p["variants"].items()
    ]
    users_doc, orders = {}, {}
    for u in range(users):
        user_id = f"user_{u:05d}"
        methods = {}
        for kind in rng.sample(["credit_card", "paypal", "gift_card"], rng.randint(1, 2)):
            method_id = f"{kind}_{rng.randrange(10**6, 10**7)}"
            methods[method_id] = {"source": kind, "id": method_id}
        user_orders = []
        for _ in range(rng.randint(0, 3)):
            order_id = f"#W{rng.randrange(10**6, 10**7)}"
            chosen = rng.sample(items, rng.randint(1, 4))
            status = rng.choice(STATUSES)
            orders[order_id] = {
                "order_id": order_id,
                "user_id": user_id,
                "status": status,
                "payment_method_id": rng.choice(list(methods)),
                "items": [
                    {"product_id": pid, "item_id": iid, "price": price, "name": "item"}
                    for pid, iid, price in chosen
                ],
                "fulfillments": (
                    [
                        {
                            "tracking_id": [f"{rng.randrange(10**11, 10**12)}"],
                            "item_ids": [chosen[0][1]],
                        }
                    ]
                    if status in ("shipped", "delivered")
                    else []
                ),
            }
            user_orders.append(order_id)
        users_doc[user_id] = {
            "user_id": user_id,
            "name": {"first_name": f"First{u}", "last_name": f"Last{u}"},
            "address": {
                "city": rng.choice(["Oslo", "Lyon", "Austin", "Kyoto"]),
                "zip": f"{rng.randrange(10000, 99999):05d}",
            },
            "email": f"user{u}@example.com",
            "payment_methods": methods,
            "orders": user_orders,
        }
    document = {"users": users_doc, "products": products, "orders": orders}
    path.write_text(json.dumps(document, indent=1))
    return path


SHOP_SQL = """
CREATE TABLE customers (id serial PRIMARY KEY, name varchar(80) NOT NULL, email text UNIQUE,
  city text, created_at timestamptz NOT NULL);
CREATE TABLE products (sku varchar(12) PRIMARY KEY, title text NOT NULL,
  price numeric(10,2) NOT NULL CHECK (price >= 0), stock integer NOT NULL);
CREATE TABLE orders (id serial PRIMARY KEY, customer_id integer NOT NULL REFERENCES customers(id),
  status varchar(12) NOT NULL, placed_at timestamptz NOT NULL, note text);
CREATE TABLE order_items (order_id integer NOT NULL REFERENCES orders(id),
  sku varchar(12) NOT NULL REFERENCES products(sku), quantity integer NOT NULL,
  PRIMARY KEY (order_id, sku));
INSERT INTO customers (name, email, city, created_at)
  SELECT 'Customer ' || g, 'c' || g || '@example.com', (ARRAY['Oslo','Lyon','Austin','Kyoto'])[1 + g % 4],
         timestamptz '2024-01-01' + g * interval '37 minutes' FROM generate_series(1, {customers}) g;
INSERT INTO products SELECT 'SKU' || lpad(g::text, 6, '0'), 'Product ''' || g || ''' deluxe',
  round((g % 500 + 0.99)::numeric, 2), g % 40 FROM generate_series(1, 2000) g;
INSERT INTO orders (customer_id, status, placed_at, note)
  SELECT 1 + g % {customers}, (ARRAY['pending','processing','shipped','delivered','cancelled'])[1 + g % 5],
         timestamptz '2024-02-01' + g * interval '11 minutes',
         CASE WHEN g % 7 = 0 THEN NULL ELSE 'Leave at door, ring twice — thanks ' || g END
  FROM generate_series(1, {orders}) g;
INSERT INTO order_items SELECT o, 'SKU' || lpad((1 + (o * 7 + k * 13) % 2000)::text, 6, '0'), 1 + k
  FROM generate_series(1, {orders}) o, generate_series(0, 2) k;
"""


def postgres_dump(path: Path, orders: int = 350_000) -> Path:
    name = f"aw_bench_{uuid.uuid4().hex[:8]}"
    base = ["-h", "127.0.0.1", "-U", "root"]
    subprocess.run(["createdb", *base, name], check=True)
    try:
        sql = SHOP_SQL.format(customers=max(1000, orders // 10), orders=orders)
        subprocess.run(
            ["psql", *base, "-q", "-v", "ON_ERROR_STOP=1", "-d", name, "-c", sql], check=True
        )
        with path.open("w") as out:
            subprocess.run(["pg_dump", *base, "--no-owner", name], check=True, stdout=out)
    finally:
        subprocess.run(["dropdb", *base, name], check=True)
    return path
