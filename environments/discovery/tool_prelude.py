"""Shared private helpers placed at the top of every generated tools.py.

These run inside the sandbox worker with only the `db` connection, so they import nothing. The
generator embeds this file's source verbatim (below the marker); it is also importable here so
the helpers are tested like any other code.
"""

# --- tools.py prelude starts here ---
_MAX_LIMIT = 100


class _Refused(ValueError):
    """A refusal raised on purpose (a rule, a duplicate, a missing field): the runtime hands
    its message to the agent as it is, as a tool_error."""

    tool_refusal = "tool_error"


class _BadArgument(_Refused):
    """An argument in the wrong form (not an ISO date, outside an enum, unknown): the runtime
    reports it as invalid_arguments."""

    tool_refusal = "invalid_arguments"


class _NotFound(LookupError):
    """No row with that key: a refusal in words, not a bug."""

    tool_refusal = "tool_error"


class _Forbidden(PermissionError):
    """A move the rules forbid (a lifecycle step, a delete still referenced)."""

    tool_refusal = "tool_error"


def _one_of(values):
    """Allowed values as a reader writes them: 'a, b or c'."""
    words = [str(v) for v in values]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def _looks_like_date(text, kind):
    """An ISO date (YYYY-MM-DD); for a datetime column also YYYY-MM-DD[T| ]HH:MM[:SS[.f]] with
    an optional Z or +HH:MM offset."""
    if not isinstance(text, str) or len(text) < 10 or text[4] != "-" or text[7] != "-":
        return False
    year, month, day = text[:4], text[5:7], text[8:10]
    if not (year.isdigit() and month.isdigit() and day.isdigit()):
        return False
    if not (1 <= int(month) <= 12 and 1 <= int(day) <= 31):
        return False
    if len(text) == 10:
        return True
    return kind == "datetime" and _looks_like_time(text[10:])


def _looks_like_time(rest):
    if rest[:1] not in ("T", " ") or len(rest) < 6:
        return False
    rest = rest[1:]
    if rest.endswith("Z"):
        rest = rest[:-1]
    elif len(rest) > 8 and rest[-6] in "+-" and rest[-3] == ":":
        rest = rest[:-6]
    clock, _, fraction = rest.partition(".")
    parts = clock.split(":")
    if len(parts) not in (2, 3) or not all(len(p) == 2 and p.isdigit() for p in parts):
        return False
    if int(parts[0]) > 23 or int(parts[1]) > 59 or (len(parts) == 3 and int(parts[2]) > 60):
        return False
    return fraction.isdigit() if "." in rest else True


_DATE_FORMS = {
    "date": "ISO date YYYY-MM-DD",
    "datetime": "ISO date-time YYYY-MM-DDTHH:MM:SS, or a date YYYY-MM-DD",
}


def _check_value(table, column, kind, value, param=None):
    """The value converted for its column, or ValueError saying what was expected (naming the
    argument `param` when the value is one)."""
    if value is None:
        return None
    where = f"argument {param!r}" if param else table + "." + column
    if kind == "integer":
        if isinstance(value, bool) or not isinstance(value, int):
            raise _BadArgument(f"{where} must be an integer, got {value!r}")
    elif kind == "real":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _BadArgument(f"{where} must be a number, got {value!r}")
        value = float(value)
    elif kind == "boolean":
        if not isinstance(value, bool) and value not in (0, 1):
            raise _BadArgument(f"{where} must be true or false, got {value!r}")
        value = 1 if value else 0
    elif kind in ("date", "datetime"):
        if not _looks_like_date(value, kind):
            raise _BadArgument(f"{where} must be an {_DATE_FORMS[kind]}, got {value!r}")
    elif not isinstance(value, str):
        raise _BadArgument(f"{where} must be a string, got {value!r}")
    return value


def _out(spec, row):
    """A stored row as the agent reads it: BOOLEAN columns as true/false, not 1/0."""
    row = dict(row)
    for name, column in spec["columns"].items():
        if column["kind"] == "boolean" and row.get(name) in (0, 1):
            row[name] = bool(row[name])
    return row


def _fetch(db, spec, key):
    sql = f'SELECT * FROM "{spec["table"]}" WHERE "{spec["pk"]}" = ?'
    row = db.execute(sql, (key,)).fetchone()
    if row is None:
        raise _NotFound(f"no {spec['entity']} with {spec['pk']} = {key!r}")
    return _out(spec, row)


def _take_key(spec, params):
    if spec["pk"] not in params:
        raise _BadArgument(f"missing required argument {spec['pk']!r}")
    key = params.pop(spec["pk"])
    return _check_value(spec["table"], spec["pk"], spec["key_kind"], key, spec["pk"])


def _get(db, spec, params):
    params = dict(params)
    key = _take_key(spec, params)
    _refuse_unknown(params)
    return _fetch(db, spec, key)


def _page(params):
    limit = params.pop("limit", 20)
    offset = params.pop("offset", 0)
    for name, value in (("limit", limit), ("offset", offset)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise _BadArgument(f"argument {name!r} must be a non-negative integer, got {value!r}")
    return min(limit, _MAX_LIMIT), offset


def _search(db, spec, params):
    params = dict(params)
    limit, offset = _page(params)
    order_by = params.pop("order_by", spec["pk"] or None)
    descending = params.pop("descending", False)
    clauses, args = [], []
    columns = spec["columns"]
    for name, value in params.items():
        if value is None:
            continue
        if name in columns:
            column, op = name, "="
        elif name.endswith("_contains") and name[: -len("_contains")] in columns:
            column, op = name[: -len("_contains")], "contains"
        elif name.startswith("min_") and name[4:] in columns:
            column, op = name[4:], ">="
        elif name.startswith("max_") and name[4:] in columns:
            column, op = name[4:], "<="
        else:
            raise _BadArgument(f"unknown search filter {name!r}")
        kind = columns[column]["kind"]
        if op == "contains":
            if not isinstance(value, str):
                raise _BadArgument(f"argument {name!r} must be a string, got {value!r}")
            clauses.append(f'instr(lower("{column}"), lower(?)) > 0')
        else:
            value = _check_value(spec["table"], column, kind, value, name)
            clauses.append(_compare(column, kind, op, value))
        args.append(value)
    where = (" WHERE " + " AND ".join(clauses)) if clauses else ""
    table = spec["table"]
    total = db.execute(f'SELECT COUNT(*) FROM "{table}"{where}', args).fetchone()[0]
    order = ""
    if order_by:
        if order_by not in columns:
            raise _BadArgument(f"cannot order by unknown column {order_by!r}")
        order = f' ORDER BY "{order_by}" {"DESC" if descending else "ASC"}'
        if spec["pk"] and order_by != spec["pk"]:
            order += f', "{spec["pk"]}"'
    sql = f'SELECT * FROM "{table}"{where}{order} LIMIT ? OFFSET ?'
    rows = [_out(spec, r) for r in db.execute(sql, args + [limit, offset])]
    return {"total": total, "count": len(rows), "rows": rows}


def _compare(column, kind, op, value):
    """A filter clause. Date-times compare as instants (T or space, any offset), and a date
    alone against a date-time column covers its whole day: to 2021-01-31 includes 15:00."""
    if kind != "datetime":
        return f'"{column}" {op} ?'
    if len(value) == 10:
        if op == "=":
            return f'date("{column}") = ?'
        if op == "<=":
            return f"datetime(\"{column}\") < datetime(?, '+1 day')"
    return f'datetime("{column}") {op} datetime(?)'


def _refuse_unknown(params):
    """What is left of a call's parameters after a tool took its own: none may remain."""
    if params:
        raise _BadArgument(f"unknown parameters: {', '.join(sorted(params))}")


def _parent_and_page(db, parent, params):
    """(parent key, limit, offset) of a list-for-parent call; the parent row must exist."""
    params = dict(params)
    key = _take_key(parent, params)
    limit, offset = _page(params)
    _refuse_unknown(params)
    _fetch(db, parent, key)
    return key, limit, offset


def _list_children(db, child, column, parent, params):
    key, limit, offset = _parent_and_page(db, parent, params)
    table = child["table"]
    total = db.execute(f'SELECT COUNT(*) FROM "{table}" WHERE "{column}" = ?', (key,)).fetchone()[0]
    keys = child.get("keys") or ([child["pk"]] if child["pk"] else [])
    order = " ORDER BY " + (", ".join(f'"{k}"' for k in keys) or "rowid")
    sql = f'SELECT * FROM "{table}" WHERE "{column}" = ?{order} LIMIT ? OFFSET ?'
    rows = [_out(child, r) for r in db.execute(sql, (key, limit, offset))]
    return {"total": total, "count": len(rows), "rows": rows}


def _aggregate(db, spec, params):
    params = dict(params)
    metric = params.pop("metric", None)
    column = params.pop("column", None)
    group_by = params.pop("group_by", None)
    _refuse_unknown(params)
    columns = spec["columns"]
    if metric not in ("count", "sum", "avg", "min", "max"):
        raise _BadArgument(f"metric must be count, sum, avg, min or max, got {metric!r}")
    if metric == "count":
        expression = "COUNT(*)" if column is None else f'COUNT("{column}")'
    else:
        if column is None:
            raise _BadArgument(f"metric {metric!r} needs a column")
        expression = f'{metric.upper()}("{column}")'
    if column is not None and column not in columns:
        raise _BadArgument(f"unknown column {column!r}")
    if column is not None and metric in ("sum", "avg"):
        measures = spec.get("measures")
        if (
            measures is not None
            and column not in measures
            and columns[column]["kind"]
            in (
                "integer",
                "real",
            )
        ):
            choices = _one_of(measures) if measures else "no column"
            raise _BadArgument(f"{metric} of {column!r} means nothing; choose {choices}")
        if columns[column]["kind"] not in ("integer", "real"):
            kind = columns[column]["kind"]
            raise _BadArgument(f"{metric} needs a numeric column; {column!r} holds {kind} values")
    table = spec["table"]
    if group_by is None:
        value = db.execute(f'SELECT {expression} FROM "{table}"').fetchone()[0]
        return {"metric": metric, "column": column, "value": value}
    if group_by not in spec["group_columns"]:
        choices = _one_of(spec["group_columns"]) if spec["group_columns"] else "no column"
        raise _BadArgument(f"cannot group by {group_by!r}; choose {choices}")
    sql = (
        f'SELECT "{group_by}" AS grp, {expression} FROM "{table}" '
        f'GROUP BY "{group_by}" ORDER BY "{group_by}"'
    )
    boolean = columns[group_by]["kind"] == "boolean"
    groups = [
        {"group": bool(r[0]) if boolean and r[0] in (0, 1) else r[0], "value": r[1]}
        for r in db.execute(sql)
    ]
    return {"metric": metric, "column": column, "group_by": group_by, "groups": groups}


def _check_rules(spec, name, value):
    """Domain rules read from the data and the schema: observed state and enum values, sign,
    declared bounds, bounded scales, whole numbers, non-empty text."""
    if value is None:
        return
    where = spec["table"] + "." + name
    state = spec.get("states", {}).get(name)
    if state is not None and value not in state["values"]:
        raise _BadArgument(f"{where} must be one of {_one_of(state['values'])}, got {value!r}")
    allowed = spec.get("enums", {}).get(name)
    if allowed is not None and value not in allowed:
        raise _BadArgument(f"{where} must be one of {_one_of(allowed)}, got {value!r}")
    bound = spec.get("bounds", {}).get(name)
    if not bound:
        return
    if isinstance(value, str):
        if bound.get("min_length") and len(value.strip()) < bound["min_length"]:
            raise _Refused(f"{where} cannot be empty, got {value!r}")
        return
    if "minimum" in bound:
        low = bound["minimum"]
        if value < low or (bound.get("exclusive_minimum") and value == low):
            word = ">" if bound.get("exclusive_minimum") else ">="
            raise _BadArgument(f"{where} must be {word} {low} (no {name} below it), got {value!r}")
    if "maximum" in bound:
        high = bound["maximum"]
        if value > high or (bound.get("exclusive_maximum") and value == high):
            word = "<" if bound.get("exclusive_maximum") else "<="
            raise _BadArgument(f"{where} must be {word} {high} (no {name} above it), got {value!r}")
    if bound.get("integer") and value != int(value):
        raise _BadArgument(f"{where} must be a whole number (every {name} is), got {value!r}")


def _state_moves(state):
    parts = []
    for value in state["values"]:
        targets = state["transitions"].get(value) or []
        parts.append(f"{value} -> {' | '.join(targets)}" if targets else f"{value}: final")
    return "; ".join(parts)


def _transition(db, spec, column, target, tool, params):
    """Move one row's state column to target along the transitions the data shows."""
    params = dict(params)
    key = _take_key(spec, params)
    state = spec["states"][column]
    given = params.pop(column, None)
    if target is None:
        if given is None:
            raise _BadArgument(f"missing required argument {column!r}")
        target = given
    _refuse_unknown(params)
    if target not in state["values"]:
        raise _BadArgument(
            f"{spec['table']}.{column} must be one of {_one_of(state['values'])}, got {target!r}"
        )
    if given is not None and given != target:
        raise _Refused(f"{tool} always sets {column} to {target!r}, got {given!r}")
    current = _fetch(db, spec, key)[column]
    allowed = state["transitions"].get(current) or []
    if target not in allowed:
        sources = [v for v in state["values"] if target in (state["transitions"].get(v) or [])]
        if current is None:
            reason = f"its {column} is empty"
        elif not allowed:
            reason = f"{current!r} is final"
        else:
            reason = f"from {current!r} only to {_one_of(allowed)}"
        raise _Forbidden(
            f"cannot move {spec['entity']} {key!r} from {column} {current!r} to {target!r}: "
            f"{reason}; {target!r} is reached only from {_one_of(sources) if sources else 'no value'} "
            f"(allowed moves: {_state_moves(state)})"
        )
    sql = f'UPDATE "{spec["table"]}" SET "{column}" = ? WHERE "{spec["pk"]}" = ?'
    db.execute(sql, (target, key))
    return _fetch(db, spec, key)


def _validate_row(db, spec, values, key=None):
    """Type, foreign-key and uniqueness checks shared by create and update."""
    columns = spec["columns"]
    clean = {}
    for name, value in values.items():
        if name not in columns:
            raise _BadArgument(f"{spec['entity']} has no field {name!r}")
        if value is None and columns[name]["not_null"]:
            raise _Refused(f"{spec['table']}.{name} is required and cannot be null")
        clean[name] = _check_value(spec["table"], name, columns[name]["kind"], value, name)
        _check_rules(spec, name, clean[name])
    for name, (ref_table, ref_column) in spec["fks"].items():
        if clean.get(name) is not None:
            sql = f'SELECT 1 FROM "{ref_table}" WHERE "{ref_column}" = ?'
            if db.execute(sql, (clean[name],)).fetchone() is None:
                raise _NotFound(f"{name} = {clean[name]!r} does not exist in {ref_table}")
    for name in spec["unique"]:
        if clean.get(name) is None:
            continue
        keys = [spec["pk"]] if spec["pk"] else (spec.get("keys") or [name])
        picked = ", ".join(f'"{k}"' for k in keys)
        sql = f'SELECT {picked} FROM "{spec["table"]}" WHERE "{name}" = ?'
        found = db.execute(sql, (clean[name],)).fetchone()
        found_key = None if found is None else (found[0] if spec["pk"] else tuple(found))
        if found is not None and (key is None or found_key != key):
            raise _Refused(f"a {spec['entity']} with {name} = {clean[name]!r} already exists")
    return clean


def _create(db, spec, values):
    values = {k: v for k, v in values.items() if v is not None}
    missing = [c for c in spec["required"] if c not in values]
    if missing:
        raise _Refused(f"missing required fields: {', '.join(missing)}")
    clean = _validate_row(db, spec, values)
    cursor = _write(db, spec, _insert_sql(spec["table"], clean), list(clean.values()))
    if clean.get(spec["pk"]) is not None:
        return _fetch(db, spec, clean[spec["pk"]])
    row = db.execute(f'SELECT * FROM "{spec["table"]}" WHERE rowid = ?', (cursor.lastrowid,))
    return _out(spec, row.fetchone())


def _write(db, spec, sql, args):
    """Run a write; a constraint of the database itself (a CHECK, NOT NULL) refuses in words."""
    try:
        return db.execute(sql, args)
    except Exception as exc:
        if type(exc).__name__ != "IntegrityError":
            raise
        raise _Refused(
            f"the {spec['entity']} was refused by a rule of the database: {exc}"
        ) from None


def _insert_sql(table, clean):
    """INSERT of the given columns; with none, a row of defaults (every field optional)."""
    if not clean:
        return f'INSERT INTO "{table}" DEFAULT VALUES'
    names = ", ".join(f'"{c}"' for c in clean)
    marks = ", ".join("?" for _ in clean)
    return f'INSERT INTO "{table}" ({names}) VALUES ({marks})'


def _update(db, spec, params):
    values = dict(params)
    key = _take_key(spec, values)
    _fetch(db, spec, key)
    if spec["pk"] in values:
        raise _Refused(f"{spec['pk']} is the key and cannot be changed")
    if not values:
        raise _Refused("give at least one field to change")
    for name in values:
        state = spec.get("states", {}).get(name)
        if state is not None:
            raise _Forbidden(
                f"{spec['entity']} {name} cannot be set by update; use "
                f"{', '.join(state['tools']) or 'no tool (no move is allowed)'}"
                f" (allowed moves: {_state_moves(state)})"
            )
    clean = _validate_row(db, spec, values, key)
    assignments = ", ".join(f'"{c}" = ?' for c in clean)
    sql = f'UPDATE "{spec["table"]}" SET {assignments} WHERE "{spec["pk"]}" = ?'
    _write(db, spec, sql, list(clean.values()) + [key])
    return _fetch(db, spec, key)


def _delete(db, spec, params):
    params = dict(params)
    key = _take_key(spec, params)
    _refuse_unknown(params)
    _fetch(db, spec, key)
    for child_table, child_column in spec["children"]:
        sql = f'SELECT COUNT(*) FROM "{child_table}" WHERE "{child_column}" = ?'
        count = db.execute(sql, (key,)).fetchone()[0]
        if count:
            raise _Forbidden(
                f"cannot delete {spec['entity']} {key!r}: {count} {child_table} rows refer to it"
            )
    db.execute(f'DELETE FROM "{spec["table"]}" WHERE "{spec["pk"]}" = ?', (key,))
    return {"deleted": True, spec["pk"]: key}


def _link_keys(spec, keys, params):
    """The values of a composite key taken out of params, each checked for its column."""
    values = {}
    for name in keys:
        if params.get(name) is None:
            raise _BadArgument(f"missing required argument {name!r}")
        kind = spec["columns"][name]["kind"]
        values[name] = _check_value(spec["table"], name, kind, params.pop(name), name)
    return values


def _link_words(spec, key):
    return spec["entity"] + " (" + ", ".join(f"{k} = {v!r}" for k, v in key.items()) + ")"


def _find_link(db, spec, key):
    where = " AND ".join(f'"{k}" = ?' for k in key)
    sql = f'SELECT * FROM "{spec["table"]}" WHERE {where}'
    row = db.execute(sql, list(key.values())).fetchone()
    return None if row is None else _out(spec, row)


def _add_link(db, spec, keys, params):
    """Insert one row of a table keyed by several columns; a row with that key is refused."""
    values = dict(params)
    key = _link_keys(spec, keys, values)
    if _find_link(db, spec, key) is not None:
        raise _Refused(f"{_link_words(spec, key)} already exists")
    row = {**key, **{k: v for k, v in values.items() if v is not None}}
    missing = [c for c in spec["required"] if c not in row]
    if missing:
        raise _Refused(f"missing required fields: {', '.join(missing)}")
    clean = _validate_row(db, spec, row)
    _write(db, spec, _insert_sql(spec["table"], clean), list(clean.values()))
    return _find_link(db, spec, key)


def _named_link(db, spec, keys, params, missing=""):
    """(key, row) of the row all of ``params`` name (every key part, nothing else); refused
    in words when a parameter is unknown or no such row exists (``missing`` ends the words)."""
    params = dict(params)
    key = _link_keys(spec, keys, params)
    _refuse_unknown(params)
    row = _find_link(db, spec, key)
    if row is None:
        raise _NotFound(f"no {_link_words(spec, key)}{missing}")
    return key, row


def _get_link(db, spec, keys, params):
    """One row of a table keyed by several columns, by all of its key's parts."""
    return _named_link(db, spec, keys, params)[1]


def _update_link(db, spec, keys, params):
    """Change non-key fields of one row keyed by several columns; the key cannot change
    (remove it and add another), and the same rules as create apply to the fields."""
    values = dict(params)
    key = _link_keys(spec, keys, values)
    if _find_link(db, spec, key) is None:
        raise _NotFound(f"no {_link_words(spec, key)}")
    if not values:
        raise _Refused("give at least one field to change")
    clean = _validate_row(db, spec, values, tuple(key.values()))
    assignments = ", ".join(f'"{c}" = ?' for c in clean)
    where = " AND ".join(f'"{k}" = ?' for k in key)
    sql = f'UPDATE "{spec["table"]}" SET {assignments} WHERE {where}'
    _write(db, spec, sql, list(clean.values()) + list(key.values()))
    return _find_link(db, spec, key)


def _remove_link(db, spec, keys, params):
    """Delete one row of a table keyed by several columns, naming it when it does not exist."""
    key, _ = _named_link(db, spec, keys, params, " exists to remove")
    where = " AND ".join(f'"{k}" = ?' for k in key)
    db.execute(f'DELETE FROM "{spec["table"]}" WHERE {where}', list(key.values()))
    return {"removed": True, **key}


def _list_linked(db, link, via, target_column, target, parent, params):
    """Rows of `target` linked to one `parent` row through the link table's two columns."""
    key, limit, offset = _parent_and_page(db, parent, params)
    ref = link["fks"][target_column][1]
    joined = (
        f'FROM "{target["table"]}" AS t JOIN "{link["table"]}" AS l '
        f'ON l."{target_column}" = t."{ref}" WHERE l."{via}" = ?'
    )
    total = db.execute(f"SELECT COUNT(*) {joined}", (key,)).fetchone()[0]
    sql = f'SELECT t.* {joined} ORDER BY t."{ref}" LIMIT ? OFFSET ?'
    rows = [_out(target, r) for r in db.execute(sql, (key, limit, offset))]
    return {"total": total, "count": len(rows), "rows": rows}
