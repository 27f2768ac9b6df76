"""Helpers placed in tools.py of an environment built from a theme (below the marker).

They run in the sandbox worker with the episode's `db` and the module-level `json`. Every theme
tool is `def <theme tool name>(db, **params): return _th_call(db, _TH_PLAN_<n>, params)`, where
the plan (operation, table, which column each parameter binds to, output shape) was read from
the theme (environments.builder.theme_plans). `_TH_TABLES` describes every table.
"""

import json  # noqa: F401 - tools.py imports json itself; this keeps the module importable

_TH_TABLES: dict = {}

# --- theme prelude starts here ---
_TH_MAX_ROWS = 100


def _th_spec(table):
    return _TH_TABLES[table]


def _th_decode(spec, row):
    out = {}
    for name, value in dict(row).items():
        field = spec["fields"].get(name, {})
        if field.get("hidden"):
            continue
        if field.get("json") and isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                pass
        elif field.get("type") == "boolean" and value is not None:
            value = bool(value)
        out[name] = value
    return out


def _th_number(text):
    """The number a string spells in plain decimal ("42" -> 42, "-2.5" -> -2.5), or the
    string as given ("4_2", " 7", "1e3" and numbers SQLite cannot hold stay text)."""
    digits = text[1:] if text[:1] == "-" else text
    whole, _dot, fraction = digits.partition(".")
    if not (whole.isascii() and whole.isdigit()) or (_dot and not fraction.isdigit()):
        return text
    if fraction:
        return float(text)
    number = int(text)
    return number if -(2**63) <= number < 2**63 else text


def _th_check(spec, name, value, param=None):
    """The value for column `name`, checked; an error names the argument `param` when given."""
    field = spec["fields"].get(name)
    where = f"argument {param!r}" if param else spec["entity"] + "." + name
    if field is None:
        raise ValueError(f"{where} is not a field of {spec['entity']}")
    if value is None:
        return None
    kind = field["type"]
    if kind in ("integer", "number") and isinstance(value, str):
        value = _th_number(value)  # a document may send ids and amounts as strings ("42")
    if kind == "integer":
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            else:
                raise ValueError(f"{where} must be an integer, got {value!r}")
    elif kind == "number":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"{where} must be a number, got {value!r}")
    elif kind == "boolean":
        if not isinstance(value, bool):
            raise ValueError(f"{where} must be true or false, got {value!r}")
        value = 1 if value else 0
    elif kind in ("date", "datetime"):
        text = value if isinstance(value, str) else ""
        if len(text) < 10 or text[4] != "-" or text[7] != "-" or not text[:4].isdigit():
            raise ValueError(f"{where} must be an ISO {kind}, got {value!r}")
    elif kind == "array":
        if not isinstance(value, list):
            raise ValueError(f"{where} must be a list, got {value!r}")
        if field.get("enum"):
            bad = [v for v in value if v not in field["enum"]]
            if bad:
                raise ValueError(f"{where} values {bad!r} are not among {field['enum']!r}")
        return json.dumps(value, sort_keys=True)
    elif kind == "object":
        if not isinstance(value, dict):
            raise ValueError(f"{where} must be an object, got {value!r}")
        return json.dumps(value, sort_keys=True)
    elif not isinstance(value, str):
        raise ValueError(f"{where} must be a string, got {value!r}")
    if field.get("enum") and kind != "array" and value not in field["enum"]:
        raise ValueError(f"{where} must be one of {field['enum']!r}, got {value!r}")
    return value


def _th_fetch(db, spec, key, column=None):
    column = column or spec["key"]
    row = db.execute(
        f'SELECT * FROM "{spec["table"]}" WHERE "{column}" = ? ORDER BY rowid', (key,)
    ).fetchone()
    if row is None:
        raise LookupError(f"no {spec['entity']} with {column} = {key!r}")
    return dict(row)


def _th_by_key(db, spec, by_role):
    """The row the key argument names, within the scopes the filter arguments give: a name
    may repeat under other parents (`/groups/{group}/items/{name}`), and the row asked for is
    the one under the parents given. A row that has the key under other parents is named."""
    found = _th_one(by_role, "key")
    if found is None:
        raise ValueError(f"missing the {spec['entity']}'s {spec['key']}")
    param, binding, value = found
    column = binding[1]
    value = _th_check(spec, column, value, param)
    rows = [
        dict(r)
        for r in db.execute(
            f'SELECT * FROM "{spec["table"]}" WHERE "{column}" = ? ORDER BY rowid', (value,)
        )
    ]
    if not rows:
        raise LookupError(f"no {spec['entity']} with {column} = {value!r}")
    scopes = [
        (p, b[1], v, _th_check(spec, b[1], v, p))
        for p, b, v in by_role.get("filter", [])
        if v is not None
    ]
    for row in rows:
        if all(row.get(c) == stored for _p, c, _v, stored in scopes):
            return row
    row = rows[0]
    _p, c, given, _stored = next(s for s in scopes if row.get(s[1]) != s[3])
    raise LookupError(
        f"{spec['entity']} {row[spec['key']]!r} has {c} {row.get(c)!r}, not {given!r}"
    )


def _th_check_refs(db, spec, values):
    for name, value in values.items():
        ref = spec["fields"].get(name, {}).get("ref")
        if ref and value is not None:
            target = _TH_TABLES[ref]
            found = db.execute(
                f'SELECT 1 FROM "{target["table"]}" WHERE "{target["key"]}" = ?', (value,)
            ).fetchone()
            if found is None:
                raise LookupError(f"{name}: no {target['entity']} with {target['key']} = {value!r}")


def _th_args(plan, params):
    """(role -> [(param, column, value)]) for the given arguments; unknown or unsupported refused."""
    by_role = {}
    for param, value in params.items():
        binding = plan["bindings"].get(param)
        if binding is None:
            raise ValueError(f"unknown parameter {param!r}")
        if binding[0] == "unsupported":
            if value is None:
                continue
            raise ValueError(
                f"parameter {param!r} is not supported by this environment's {plan['name']}"
            )
        by_role.setdefault(binding[0], []).append((param, binding, value))
    return by_role


def _th_one(by_role, role):
    found = by_role.get(role) or []
    return found[0] if found else None


def _th_new_key(db, spec):
    table, key = spec["table"], spec["key"]
    if spec["key_type"] == "integer":
        top = db.execute(f'SELECT MAX("{key}") FROM "{table}"').fetchone()[0]
        return (top or 0) + 1
    count = db.execute(f'SELECT COUNT(*) FROM "{table}"').fetchone()[0]
    if key.lower() in ("sha", "revision", "hash") or key.lower().endswith(("_sha", "_hash")):
        return "%040x" % (0xA0000000 + count + 1)
    return f"{spec['entity']}-{count + 1}"


def _th_insert(db, spec, values, plan, params=None):
    options = plan.get("options", {})
    clean = {}
    for name, value in values.items():
        clean[name] = _th_check(spec, name, value, (params or {}).get(name))
    for name, value in (plan.get("server_values") or {}).items():
        if clean.get(name) is None:  # what the server fills on every row it creates
            clean[name] = _th_check(spec, name, value, name)
    key = spec["key"]
    if clean.get(key) is None:
        if (
            spec["fields"][key].get("hidden")
            or spec["key_type"] == "integer"
            or plan.get("auto_key")
        ):
            clean[key] = _th_new_key(db, spec)
        else:
            raise ValueError(f"missing required field {key!r}")
    missing = [
        n
        for n, f in spec["fields"].items()
        if f.get("required") and n != key and clean.get(n) is None and n in plan["fields"]
    ]
    if missing:
        raise ValueError(f"missing required fields: {', '.join(missing)}")
    _th_check_refs(db, spec, clean)
    exists = db.execute(
        f'SELECT 1 FROM "{spec["table"]}" WHERE "{key}" = ?', (clean[key],)
    ).fetchone()
    if exists is not None:
        if options.get("idempotent"):
            return _th_fetch(db, spec, clean[key]), False
        if not options.get("upsert"):
            raise ValueError(f"a {spec['entity']} with {key} = {clean[key]!r} already exists")
        sets = ", ".join(f'"{n}" = ?' for n in clean if n != key)
        if sets:
            db.execute(
                f'UPDATE "{spec["table"]}" SET {sets} WHERE "{key}" = ?',
                [v for n, v in clean.items() if n != key] + [clean[key]],
            )
        return _th_fetch(db, spec, clean[key]), False
    names = ", ".join(f'"{n}"' for n in clean)
    marks = ", ".join("?" for _ in clean)
    db.execute(f'INSERT INTO "{spec["table"]}" ({names}) VALUES ({marks})', list(clean.values()))
    return _th_fetch(db, spec, clean[key]), True


def _th_children(db, spec, key):
    """(table spec, column, count) of rows elsewhere that refer to this row."""
    found = []
    for child, column in spec.get("children", []):
        other = _TH_TABLES[child]
        count = db.execute(
            f'SELECT COUNT(*) FROM "{other["table"]}" WHERE "{column}" = ?', (key,)
        ).fetchone()[0]
        if count:
            found.append((other, column, count))
    return found


def _th_remove_row(db, spec, key, plan):
    children = _th_children(db, spec, key)
    if children and not plan.get("options", {}).get("cascade"):
        names = ", ".join(f"{n} {o['table']}" for o, _, n in children)
        raise PermissionError(f"{spec['entity']} {key!r} is still referred to by {names}")
    for other, column, _ in children:
        db.execute(f'DELETE FROM "{other["table"]}" WHERE "{column}" = ?', (key,))
    db.execute(f'DELETE FROM "{spec["table"]}" WHERE "{spec["key"]}" = ?', (key,))


_TH_COMPARISONS = {"lt": "<", "lte": "<=", "gt": ">", "gte": ">="}


def _th_lookup(spec, column, lookup, value, param):
    """(SQL, arguments) of a django-filter lookup on one column, as NetBox and other REST
    framework APIs take them: `name__ic=rout` holds "rout" in any case, `name__nisw=ed` does
    not start with "ed", `id__gte=4`, `id__n=3` (not 3), `slug__empty=true` (no value)."""
    quoted = f'"{column}"'
    if lookup == "empty":
        wanted = value if isinstance(value, bool) else str(value).lower() in ("true", "1")
        blank = f"({quoted} IS NULL OR {quoted} = '')"
        return (blank if wanted else f"NOT {blank}"), []
    if lookup in _TH_COMPARISONS:
        return f"{quoted} {_TH_COMPARISONS[lookup]} ?", [_th_check(spec, column, value, param)]
    if lookup == "n":
        return f"{quoted} IS NOT ?", [_th_check(spec, column, value, param)]
    negated = lookup.startswith("n")
    text = str(value)
    kind = lookup[1:] if negated else lookup
    lowered = f"lower(CAST({quoted} AS TEXT))"
    tests = {
        "ic": (f"instr({lowered}, lower(?)) > 0", [text]),
        "isw": (f"substr({lowered}, 1, length(?)) = lower(?)", [text, text]),
        "iew": (f"substr({lowered}, -length(?)) = lower(?)", [text, text]),
        "ie": (f"{lowered} = lower(?)", [text]),
    }
    if kind not in tests:
        raise ValueError(f"argument {param!r}: the lookup {lookup!r} is not one this tool reads")
    clause, values = tests[kind]
    return (f"NOT COALESCE({clause}, 0)" if negated else clause), values


_TH_DIRECTIONS = ("asc", "desc", "ascending", "descending")


def _th_order(spec, given):
    """The ORDER BY of a listing: by key, or as its order arguments ask: fields (`name`,
    `-name`, `name desc`, `name:descending`, several separated by commas; REST framework's
    `ordering`, OData's `$orderby`) and a direction alone (`sort=desc`, beside GitLab's
    `order_by=name`) for the fields that say none, or for the key."""
    key = f'"{spec["key"]}"'
    columns = {n.lower(): n for n, f in spec["fields"].items() if not f.get("hidden")}
    terms, direction = [], ""
    for param, _binding, value in given:
        text = str(value if value is not None else "").strip()
        if text.lower() in _TH_DIRECTIONS:
            direction = " DESC" if text.lower().startswith("desc") else ""
            continue
        for term in text.split(","):
            term = term.strip()
            if not term:
                continue
            named = term.lstrip("-+").replace(":", " ").split()
            said = named[1].lower() if len(named) > 1 else ""
            if said and said not in _TH_DIRECTIONS:
                raise ValueError(f"argument {param!r}: {said!r} is no direction (asc, desc)")
            column = columns.get(named[0].lower()) if named else None
            if column is None:
                raise ValueError(
                    f"argument {param!r}: {term!r} is not a field of {spec['entity']} to order "
                    f"by (fields: {', '.join(sorted(columns.values()))})"
                )
            if term.startswith("-") or said.startswith("desc"):
                terms.append((column, " DESC"))
            else:
                terms.append((column, None if not said else ""))
    ordered = [f'"{c}"' + (direction if d is None else d) for c, d in terms]
    return ", ".join(ordered + [key + (direction if not terms else "")])


def _th_list(db, spec, plan, by_role, params, page=None):
    """The rows the arguments select (one page); `page`, when given, is filled with the
    total matching, the offset and the page size (an answer's envelope reports them)."""
    clauses, args = [], []
    for param, binding, value in by_role.get("filter", []):
        if value is None:
            continue
        clauses.append(f'"{binding[1]}" = ?')
        args.append(_th_check(spec, binding[1], value, param))
    for param, binding, value in by_role.get("filter_in", []):
        if value:
            marks = ", ".join("?" for _ in value)
            clauses.append(f'"{binding[1]}" IN ({marks})')
            args.extend(_th_check(spec, binding[1], v, param) for v in value)
    for role, op in (("range_min", ">="), ("range_max", "<=")):
        for _param, binding, value in by_role.get(role, []):
            if value is None:
                continue
            clauses.append(f'"{binding[1]}" {op} ?')
            args.append(value)
    for param, binding, value in by_role.get("lookup", []):
        if value is not None and value != "":  # an empty filter is none (django-filter)
            clause, values = _th_lookup(spec, binding[1], binding[2], value, param)
            clauses.append(clause)
            args.extend(values)
    for param, binding, value in by_role.get("member", []):
        if value is not None and value != "":  # `tenant=acme` over {"id": 3, "slug": "acme"}
            if isinstance(value, (list, dict)):
                raise ValueError(f"argument {param!r} must be a single value, got {value!r}")
            negated = "NOT " if binding[2:] == ["n"] else ""  # `tenant__n=acme`
            clauses.append(
                f'{negated}EXISTS (SELECT 1 FROM json_each("{binding[1]}") '
                "WHERE CAST(json_each.value AS TEXT) = CAST(? AS TEXT))"
            )
            args.append(value)
    for param, binding, value in by_role.get("query", []):
        if value is None:
            continue
        if not isinstance(value, str):
            raise ValueError(f"argument {param!r} must be a string, got {value!r}")
        columns = binding[1] or [spec["key"]]
        clauses.append(
            "(" + " OR ".join(f'instr(lower("{c}"), lower(?)) > 0' for c in columns) + ")"
        )
        args.extend(value for _ in columns)
    key = spec["key"]
    under = _th_one(by_role, "under")
    if under is not None and under[2] is not None:
        prefix = str(under[2]).rstrip("/")
        clauses.append(f"\"{key}\" LIKE ? ESCAPE '\\'")
        args.append(prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "/%")
        if not plan.get("options", {}).get("recursive"):
            clauses.append(f"instr(substr(\"{key}\", ?), '/') = 0")
            args.append(len(prefix) + 2)
    glob = _th_one(by_role, "glob")
    if glob is not None and glob[2] is not None:
        start = len(str(under[2]).rstrip("/")) + 2 if under is not None and under[2] else 1
        clauses.append(f'(substr("{key}", ?) GLOB ? OR substr("{key}", ?) GLOB ?)')
        args.extend([start, glob[2], start, "*/" + glob[2]])
    for _param, _binding, value in by_role.get("exclude", []):
        for pattern in value or []:
            clauses.append(f'NOT ("{key}" GLOB ? OR "{key}" GLOB ?)')
            args.extend(["*/" + pattern, "*/" + pattern + "/*"])
    for role, op in (("after_key", ">"), ("before_key", "<")):
        for param, _binding, value in by_role.get(role, []):
            if value is None or value == "":
                continue
            clauses.append(f'"{key}" {op} ?')
            args.append(_th_check(spec, key, value, param))
    limit = _th_one(by_role, "limit")
    offset = _th_one(by_role, "offset")
    count = plan.get("default_limit") or _TH_MAX_ROWS
    if limit is not None and limit[2] is not None:
        count = limit[2]
    skip = offset[2] if offset is not None and offset[2] is not None else 0
    for name, value in (("limit", count), ("offset", skip)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise ValueError(f"argument {name!r} must be a non-negative integer, got {value!r}")
    page_number = _th_one(by_role, "page")
    if page_number is not None and isinstance(page_number[2], int) and page_number[2] > 1:
        skip = (page_number[2] - 1) * min(int(count), _TH_MAX_ROWS)
    cursor = _th_one(by_role, "cursor")
    if cursor is not None and cursor[2] not in (None, ""):
        skip = _th_token(cursor[0], cursor[2])
    where = (" WHERE " + " AND ".join(clauses)) if clauses else ""
    order = _th_order(spec, by_role.get("order", []))
    sql = f'SELECT * FROM "{spec["table"]}"{where} ORDER BY {order} LIMIT ? OFFSET ?'
    rows = db.execute(sql, args + [min(int(count), _TH_MAX_ROWS), int(skip)]).fetchall()
    if page is not None:
        total_sql = f'SELECT COUNT(*) FROM "{spec["table"]}"{where}'
        page["total"] = db.execute(total_sql, args).fetchone()[0]
        page["offset"], page["limit"] = int(skip), min(int(count), _TH_MAX_ROWS)
        roles = {b[0] for b in plan["bindings"].values()}
        page["resumable"] = bool(roles & {"cursor", "offset", "page"})  # a next page reachable
    return [dict(r) for r in rows]


def _th_token(param, value):
    """The offset a page token stands for: the tools give the next page's offset as the token."""
    text = str(value)
    if not text.isdigit():
        raise ValueError(
            f"argument {param!r} = {value!r} is not a page token of this listing (a token is "
            "the next-page value of a previous answer)"
        )
    return int(text)


def _th_envelope(envelope, rows, single, page):
    """The rows in the document's own response body: under their property, with the totals,
    counts and page tokens the document declares, told truthfully, and its required values."""
    keep = set(envelope["no_null"])
    rows = [{k: v for k, v in r.items() if v is not None or k not in keep} for r in rows]
    body = rows if envelope["many"] else (rows[0] if rows else {})
    if not envelope["rows"]:  # the row is the body: what the document fixes is added to it
        for field in envelope["fields"] if isinstance(body, dict) else ():
            if field["path"][0] not in body:
                body[field["path"][0]] = True if field["role"] == "done" else field["value"]
        return body
    page = page or {"total": len(rows), "offset": 0, "limit": len(rows), "resumable": False}
    after = page["offset"] + len(rows)
    more = after < page["total"]
    out = {}
    for field in envelope["fields"]:
        role = field["role"]
        if role == "total":
            value = page["total"]
        elif role == "count":
            value = len(rows)
        elif role == "has_more":
            value = more
        elif role == "next":
            value = None
            if more and page["resumable"]:
                value = after if field["type"] == "integer" else str(after)
        elif role == "page":
            value = page["offset"] // page["limit"] + 1 if page["limit"] else 1
        elif role == "page_size":
            value = page["limit"]
        elif role == "offset":
            value = page["offset"]
        elif role == "done":
            value = True
        else:
            value = field["value"]
        if value is None and not field["nullable"]:
            if not field["required"]:
                continue
            value = field["value"]
        _th_put(out, field["path"], value)
    _th_put(out, envelope["rows"], body)
    return out


def _th_put(out, path, value):
    for prop in path[:-1]:
        out = out.setdefault(prop, {})
    out[path[-1]] = value


def _th_shape(db, spec, plan, rows, single, page=None):
    """Shape the result the way the theme's output schema says."""
    output = plan.get("output") or {}
    mode = output.get("mode", "plain")
    decoded = [_th_decode(spec, r) for r in rows]
    if mode == "envelope":
        return _th_envelope(output["envelope"], decoded, single, page)
    if mode == "multi":
        out = {}
        keys = [r[spec["key"]] for r in rows]
        for prop, entity in output["multi"].items():
            other = _TH_TABLES[entity]
            if other["table"] == spec["table"]:
                out[prop] = decoded
                continue
            if plan["op"] == "dump":
                found = db.execute(f'SELECT * FROM "{other["table"]}" ORDER BY rowid').fetchall()
            else:
                columns = [c for c, f in other["fields"].items() if f.get("ref") == spec["entity"]]
                found = []
                if columns and keys:
                    marks = ", ".join("?" for _ in keys)
                    where = " AND ".join(f'"{c}" IN ({marks})' for c in columns)
                    found = db.execute(
                        f'SELECT * FROM "{other["table"]}" WHERE {where} ORDER BY rowid',
                        keys * len(columns),
                    ).fetchall()
            out[prop] = [_th_decode(other, r) for r in found]
        return out
    result = decoded[0] if single else decoded
    if mode == "text":
        column = output.get("column")
        if single and column and column in result:
            value = result[column]
            return {output["prop"]: value if isinstance(value, str) else json.dumps(value)}
        return {output["prop"]: json.dumps(result, sort_keys=True)}
    if mode == "wrap":
        return {output["prop"]: result if isinstance(result, list) else [result]}
    if mode == "status":
        return {"success": True, "message": f"{plan['name']}: done"}
    return result


def _th_int64(params):
    """An integer argument SQLite cannot hold is refused in words, before any row is read."""
    for name, value in params.items():
        values = value if isinstance(value, list) else [value]
        for item in values:
            if isinstance(item, int) and not isinstance(item, bool):
                if not -(2**63) <= item < 2**63:
                    raise ValueError(
                        f"argument {name!r} is {item}, an integer too large for this "
                        "environment: integers are stored in 64 bits (-2^63 to 2^63-1)"
                    )


def _th_call(db, plan, params):
    _th_int64(params)
    spec = _th_spec(plan["table"])
    by_role = _th_args(plan, dict(params))
    op = plan["op"]
    key = spec["key"]
    if op == "get":
        row = _th_by_key(db, spec, by_role)
        return _th_shape(db, spec, plan, [row], True)
    if op == "get_by_fields":
        rows = _th_list(db, spec, plan, by_role, params)
        if not rows:
            given = {p: v for p, _b, v in by_role.get("filter", [])}
            raise LookupError(f"no {spec['entity']} with {given!r}")
        return _th_shape(db, spec, plan, rows[:1], True)
    if op == "get_many":
        keys = _th_one(by_role, "keys")[2] or []
        rows = []
        for value in keys:
            found = db.execute(
                f'SELECT * FROM "{spec["table"]}" WHERE "{key}" = ?', (value,)
            ).fetchone()
            if found is not None:
                rows.append(dict(found))
        if not rows:
            raise LookupError(f"no {spec['entity']} with {key} in {keys!r}")
        return _th_shape(db, spec, plan, rows, False)
    if op in ("list", "dump"):
        page = {}
        rows = _th_list(db, spec, plan, by_role, params, page)
        return _th_shape(db, spec, plan, rows, False, page)
    if op == "create":
        values = {b[1]: v for _p, b, v in by_role.get("field", [])}
        params = {b[1]: p for p, b, _v in by_role.get("field", [])}
        row, _created = _th_insert(db, spec, values, plan, params)
        return _th_shape(db, spec, plan, [row], True)
    if op == "batch_create":
        _p, binding, items = _th_one(by_role, "items")
        created = []
        for item in items or []:
            if not isinstance(item, dict):
                raise ValueError(f"each of {_p} must be an object")
            values = {c: item.get(c) for c in binding[1] if c in item}
            if spec["fields"][key].get("hidden"):
                where = " AND ".join(f'"{c}" IS ?' for c in values)
                args = [_th_check(spec, c, v) for c, v in values.items()]
                if (
                    where
                    and db.execute(
                        f'SELECT 1 FROM "{spec["table"]}" WHERE {where}', args
                    ).fetchone()
                ):
                    continue
            elif (
                values.get(key) is not None
                and db.execute(
                    f'SELECT 1 FROM "{spec["table"]}" WHERE "{key}" = ?', (values[key],)
                ).fetchone()
            ):
                continue
            row, _new = _th_insert(db, spec, values, plan)
            created.append(row)
        return _th_shape(db, spec, plan, created, False)
    if op == "update":
        current = _th_by_key(db, spec, by_role)
        values = {b[1]: v for _p, b, v in by_role.get("field", []) if v is not None}
        params = {b[1]: p for p, b, _v in by_role.get("field", [])}
        if not values:
            raise ValueError("give at least one field to change")
        clean = {n: _th_check(spec, n, v, params.get(n)) for n, v in values.items()}
        _th_check_refs(db, spec, clean)
        sets = ", ".join(f'"{n}" = ?' for n in clean)
        db.execute(
            f'UPDATE "{spec["table"]}" SET {sets} WHERE "{key}" = ?',
            list(clean.values()) + [current[key]],
        )
        return _th_shape(db, spec, plan, [_th_fetch(db, spec, current[key])], True)
    if op == "delete":
        current = _th_by_key(db, spec, by_role)
        _th_remove_row(db, spec, current[key], plan)
        if (plan.get("output") or {}).get("mode") in ("status", "text", "envelope"):
            return _th_shape(db, spec, plan, [current], True)
        return {"deleted": True, key: current[key]}
    if op == "batch_delete":
        removed = 0
        keys = _th_one(by_role, "keys")
        items = _th_one(by_role, "items")
        if keys is not None:
            for value in keys[2] or []:
                if db.execute(
                    f'SELECT 1 FROM "{spec["table"]}" WHERE "{key}" = ?', (value,)
                ).fetchone():
                    _th_remove_row(db, spec, value, plan)
                    removed += 1
        if items is not None:
            for item in items[2] or []:
                values = {c: item.get(c) for c in items[1][1] if c in item}
                if not values:
                    continue
                where = " AND ".join(f'"{c}" IS ?' for c in values)
                args = [_th_check(spec, c, v) for c, v in values.items()]
                removed += db.execute(f'DELETE FROM "{spec["table"]}" WHERE {where}', args).rowcount
        if (plan.get("output") or {}).get("mode") == "status":
            return {"success": True, "message": f"{removed} {spec['table']} deleted"}
        return {"deleted": removed}
    if op == "transition":
        current = _th_by_key(db, spec, by_role)
        column, target = plan["options"]["column"], plan["options"]["target"]
        if current[column] == target:
            raise ValueError(
                f"{spec['entity']} {current[key]!r} is already {target!r}; "
                f"{plan['name']} moves {column} from another value to {target!r}"
            )
        db.execute(
            f'UPDATE "{spec["table"]}" SET "{column}" = ? WHERE "{key}" = ?',
            (target, current[key]),
        )
        return _th_shape(db, spec, plan, [_th_fetch(db, spec, current[key])], True)
    if op in ("append", "remove"):
        _p, binding, items = _th_one(by_role, "list_items")
        column, ref, values_name = binding[1], binding[2], binding[3]
        results = []
        for item in items or []:
            if not isinstance(item, dict) or ref not in item:
                raise ValueError(f"each item needs {ref!r}")
            current = _th_fetch(db, spec, item[ref])
            present = json.loads(current[column] or "[]")
            given = item.get(values_name) or []
            if not isinstance(given, list):
                raise ValueError(f"{values_name} must be a list")
            if op == "append":
                changed = [v for v in given if v not in present]
                present = present + changed
            else:
                changed = [v for v in given if v in present]
                present = [v for v in present if v not in given]
            db.execute(
                f'UPDATE "{spec["table"]}" SET "{column}" = ? WHERE "{key}" = ?',
                (json.dumps(present, sort_keys=True), current[key]),
            )
            results.append((item[ref], changed))
        output = plan.get("output") or {}
        if output.get("mode") == "status":
            return {"success": True, "message": f"{plan['name']}: {len(results)} updated"}
        if output.get("mode") == "wrap":
            props = [p for p in output.get("item_props", []) if p != ref] or ["changed"]
            return {output["prop"]: [{ref: k, props[0]: c} for k, c in results]}
        return [{ref: k, "changed": c} for k, c in results]
    raise ValueError(f"operation {op!r} is not implemented")
