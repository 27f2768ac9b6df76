"""One plan per theme tool: its operation kind and which column every parameter binds to.

The tools' own object schemas add entities first (MCP `inputSchema`/`outputSchema`, JSON-schema
tool lists, OpenAPI bodies: arrays of objects are entities; `<entity>Name`, `<entity>_id`, "the
name of the entity" are references). Then each tool gets a plan: its operation kind (get,
get_many, list/search, create, batch create, update, delete, batch delete, state transition,
append/remove items of a list field, dump) read from the tool's name (camelCase or snake_case
verb + noun), the HTTP method, MCP annotations and the first verb of the description
(`theme_verbs`); last, every parameter is bound to a column. A tool whose parameters cannot be
bound, whose entity cannot be found, or which needs the outside world (a URL to fetch, the clock,
e-mail, a shell) is kept as a *rejected* plan with the reason; nothing is guessed silently.
"""

from __future__ import annotations

import re
from typing import Any

from environments.discovery.naming import plural, singular, squashed
from environments.discovery.themes import ENDS_IN_ROW

from .theme_envelope import answers_many, bookkeeping, read_envelope
from .theme_model import (
    QUANTIFIERS,
    EntitySpec,
    FieldSpec,
    ThemeModel,
    ToolPlan,
    all_of,
    column_name_ok,
    entity_name,
    field_from_schema,
    named_key_column,
    plain_type,
    snake,
    words,
)
from .theme_verbs import (
    ACTIONS,
    CLOCK_WORDS,
    COMPUTATION_PHRASES,
    COMPUTATIONS,
    CREDENTIALS,
    CURSORS,
    DESCRIPTION_VERBS,
    GLOB_NAMES,
    KEY_CURSORS,
    KEY_NAMES,
    MODIFIERS,
    ORDERING_NAMES,
    OUTSIDE_PARAMS,
    OUTSIDE_WORDS,
    PAGING,
    PRESENTATION,
    QUERY_NAMES,
    TRANSITIONS,
    VERBS,
    filter_lookup,
)

OPERATION_GROUP = re.compile(r"([A-Z][A-Za-z0-9]*)_([A-Z][a-z]+[A-Za-z0-9]*)")  # Group_Operation
VERSION_SEGMENT = re.compile(r"v\d+(\.\d+)*([a-z]+\d*)?|\d{4}-\d{2}-\d{2}", re.I)
# roles of a listing's parameters that choose which rows it answers
FILTER_ROLES = ("filter", "query", "under", "glob", "range_min", "range_max", "lookup", "member")
SCALARS = ("string", "integer", "number")
SORT_DIRECTIONS = ("asc", "desc", "ascending", "descending")
MANY_ROWS = ("list", "get_many", "batch_create")  # operations answering a list of rows
ONE_ROW = ("get", "get_by_fields", "create", "update", "transition", "delete")  # one row


class ToolReader:
    """Reads a theme's tools into plans on a model: entities, plans, then bindings."""

    def __init__(self, model: ThemeModel, tools: list[dict]) -> None:
        self.model = model
        self.tools = tools
        # read on the names the document gives: `pulls/list` names its entity, while `git_status`
        # carries a server's prefix (function names write both as `<word>_...`)
        self.prefix = _common_prefix([t.get("original_name") or t.get("name", "") for t in tools])

    def read(self) -> None:
        # Pass 1: entities the tools' object schemas describe (outputs first: they are complete).
        for tool in self.tools:
            self.object_entities(tool)
        # Pass 2: a plan per tool (adds the entities named by tools and their scalar fields).
        plans = [self.plan(tool) for tool in self.tools]
        # Pass 3: bind parameters now that every entity and its fields are known.
        for plan, tool in zip(plans, self.tools, strict=True):
            if not plan.rejected:
                self.bind(plan, tool)
        self.model.plans = plans

    # -- entities from object schemas --
    def object_entities(self, tool: dict) -> None:
        out = tool.get("outputSchema") or {}
        verb, _ = self.verb_noun(tool)
        reads = verb in ("get", "list") or (tool.get("annotations") or {}).get("readOnlyHint")
        for prop, sub in (out.get("properties") or {}).items() if reads else ():
            items = (sub or {}).get("items") or {}
            if (sub or {}).get("type") == "array" and items.get("properties"):
                self.entity_from(entity_name(prop), items, f"outputSchema of {tool['name']}")
        if verb in ("create", "update") or tool.get("http", {}).get("method") in ("POST", "PUT"):
            params = tool.get("parameters") or {}
            for prop, sub in (params.get("properties") or {}).items():
                items = (sub or {}).get("items") or {}
                if (sub or {}).get("type") == "array" and items.get("properties"):
                    name = entity_name(prop)
                    if not self.list_field_owner(name, items):
                        self.entity_from(name, items, f"inputSchema of {tool['name']}")

    def entity_from(self, name: str, schema: dict, origin: str) -> EntitySpec:
        entity = self.model.entity(name)
        if origin not in entity.origins:
            entity.origins.append(origin)
        required = set(schema.get("required") or [])
        for prop, sub in (schema.get("properties") or {}).items():
            spec = field_from_schema(prop, sub, prop in required)
            entity.add(spec)
        return entity

    def list_field_owner(self, noun: str, items: dict) -> tuple[EntitySpec, str, str, str] | None:
        """(entity, list field, reference param, values param) when the items of an array
        parameter add to or remove from a list field of another entity (observations of an
        entity: {entityName, contents})."""
        props = items.get("properties") or {}
        for entity in self.model.entities.values():
            list_fields = [n for n, f in entity.fields.items() if f.type == "array"]
            if plural(noun) not in list_fields and noun not in list_fields:
                continue
            target = plural(noun) if plural(noun) in list_fields else noun
            ref = next((p for p in props if self.refers_to(p, props[p], entity.name)), "")
            values = next(
                (p for p, s in props.items() if p != ref and (s or {}).get("type") == "array"), ""
            )
            if ref and values:
                return entity, target, ref, values
        return None

    def refers_to(self, param: str, schema: dict, entity: str) -> bool:
        tokens = words(param)
        ent = words(entity)
        if (
            len(tokens) > len(ent)
            and tokens[: len(ent)] == ent
            and tokens[-1] in ("name", "id", "key", "path", "code")
        ):
            return True
        text = str((schema or {}).get("description", "")).lower()
        return bool(re.search(rf"\b(name|id|key) of the {re.escape(' '.join(ent))}\b", text))

    # -- verb and noun --
    def verb_noun(self, tool: dict) -> tuple[str, list[str]]:
        name = tool.get("name", "")
        tokens = words(name[len(self.prefix) :] if self.prefix else name)
        if not tokens:
            return "", []
        dotted = str(tool.get("original_name") or "").split(".")
        grouped = OPERATION_GROUP.fullmatch(str(tool.get("original_name") or name))
        if (len(dotted) >= 3 and words(dotted[-1]) and words(dotted[-2])) or grouped:
            # `tasks.tasklists.insert` (service.resource.method) and Azure's
            # `PrivateEndpointConnections_ListByServer` (group_operation): the method names
            # the verb, the resource before it the noun; a service is no noun of the call
            method, resource = (
                (words(grouped[2]), words(grouped[1]))
                if grouped
                else (words(dotted[-1]), words(dotted[-2]))
            )
            if "or" in method:  # `CreateOrUpdate`: the first verb, of the resource itself
                method = method[: method.index("or")]
            for op, verbs in VERBS.items():
                if method[0] in verbs:
                    return op, resource + method[1:]
            if method[0] in TRANSITIONS:
                return "transition:" + method[0], resource
        for index, token in enumerate(tokens[:2]):
            # `folders.list`, `repos/create`: the noun before the verb when none follows it
            noun = tokens[index + 1 :] or tokens[:index]
            for op, verbs in VERBS.items():
                if token in verbs:
                    return op, noun
            if token in TRANSITIONS:
                return "transition:" + token, noun
        return "", tokens

    def description_verb(self, tool: dict) -> str:
        for token in words(tool.get("description", ""))[:3]:
            for op, verbs in DESCRIPTION_VERBS.items():
                if token in verbs:
                    return op
        return ""

    def noun_entity(self, noun: list[str]) -> str:
        """The known entity a noun phrase names (longest suffix first), else ""."""
        cut = noun
        for joiner in ("with", "by", "for", "of", "in", "from", "to", "on", "info", "details"):
            if joiner in cut[1:]:
                cut = cut[: cut.index(joiner, 1)]
        cut = [w for w in cut if w not in QUANTIFIERS]
        for start in range(len(cut)):
            candidate = self.spelled_entity(singular("_".join(cut[start:])))
            if candidate:
                return candidate
        for end in range(len(cut), 0, -1):
            candidate = singular("_".join(cut[:end]))
            if candidate in self.model.entities:
                return candidate
        return ""

    def new_noun_entity(self, noun: list[str]) -> str:
        cut = noun
        for joiner in ("with", "by", "for", "of", "in", "from", "to", "on", "info", "details"):
            if joiner in cut[1:]:
                cut = cut[: cut.index(joiner, 1)]
        cut = [w for w in cut if w not in QUANTIFIERS]
        return singular(cut[-1]) if cut else ""

    # -- the plan --
    def plan(self, tool: dict) -> ToolPlan:
        params = tool.get("parameters")
        derived = not (isinstance(params, dict) and params.get("type") == "object")
        plan = ToolPlan(
            name=tool.get("name", ""),
            description=tool.get("description", "") or "",
            parameters=params if not derived else {"type": "object", "properties": {}},
            derived_parameters=derived,
            original_name=str(tool.get("original_name") or ""),
            notes=[str(n) for n in tool.get("notes") or []],
            response_schema=dict(tool.get("outputSchema") or tool.get("response_schema") or {}),
        )
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]{0,63}", plan.name):
            return plan.reject(
                f"the name {plan.name!r} is not a function name a client can call (letters, "
                "digits, '_' or '-', at most 64, starting with a letter)"
            )
        if tool.get("unreadable_parameters"):
            return plan.reject(
                "its parameters are not a JSON schema a client can read, even with the "
                "keywords JSON Schema 2020-12 refuses left out"
            )
        outside = self.outside_world(tool)
        if outside:
            return plan.reject(f"needs the outside world: {outside}")
        computed = self.computation(tool)
        if computed:
            return plan.reject(
                f"computes a result from its arguments ({computed}); the offline builder does "
                "not write computations"
            )
        verb, noun = self.verb_noun(tool)
        http = tool.get("http") or {}
        action, action_noun = self.path_action(http)
        if action and verb in ("", "create"):  # the path says more than POST or `post...`
            known = action_noun and self.noun_entity(action_noun)
            verb, noun = action, (action_noun if known or not noun else noun)
        if verb.startswith("action:"):
            word = verb.split(":", 1)[1]
            return plan.reject(
                f"performs the action {word!r} (POST {http.get('path', '')}): it "
                f"{ACTIONS[word]}, which is neither the creation, the change nor the removal "
                "of one row; the offline builder does not write actions"
            )
        annotations = tool.get("annotations") or {}
        owner = None if self.names_entity_itself(noun) else self.list_field_entity(noun)
        if owner:
            plan.options["list_field"] = owner[1]
        entity = owner[0] if owner else (self.noun_entity(noun) if noun else "")
        out_entity = self.output_entity(tool)
        from_description = not verb
        if not verb:
            verb = self.description_verb(tool)
            if verb and not entity and verb in ("get", "list", "show"):
                entity = self.description_entity(tool)
            if verb == "show":
                spec = self.model.entities.get(entity)
                keyed = spec is not None and any(
                    self.key_like(p, spec)
                    for p in (tool.get("parameters") or {}).get("properties") or {}
                    if not self.reference(p, {}, spec.name)
                )
                verb = "get" if keyed else "list"
            if not verb and http.get("method"):
                verb = self.http_verb(http)
            if verb in ("create", "update", "delete") and not entity and noun:
                entity = self.new_noun_entity(noun)
        if verb.startswith("transition:"):
            if http:  # its path names the row it moves (`/quotes/{quote}/cancel`)
                plan.options["http"] = dict(http)
            return self.plan_transition(plan, verb.split(":", 1)[1], noun, entity)
        if not verb:
            return plan.reject(
                "semantics cannot be read from the spec: no operation verb in the name "
                f"{plan.name!r} or the description"
            )
        if not entity and not noun:  # `folders.create` under a shared `folders_` prefix
            entity = self.description_entity(tool)
        reads = bool(http) and verb in ("get", "list")
        many = answers_many(plan.response_schema) if reads else None
        if many is False:
            plan.options["one_row"] = True  # the response body is one object, not rows
        if many is None and reads and http.get("method") == "GET":
            many = not ENDS_IN_ROW.search(http.get("path", ""))  # `/things/{thing}`
        if many is not None:  # the response body or the path says one row or a list of rows
            verb = "list" if many else "get"
            if not owner:
                entity = self.answered_entity(entity, tool.get("response_entity") or "")
        if many is None and verb == "get" and self.plural_noun(noun, tool):
            verb = "list"
        if (
            many is None
            and verb == "get"
            and re.search(r"\b(tree|recursive)\b", " ".join(noun) + " " + plan.description, re.I)
        ):
            verb = "list"
        if (
            many is None
            and http.get("method") == "GET"
            and verb == "get"
            and not ENDS_IN_ROW.search(http.get("path", ""))
        ):
            verb = "list"
        if annotations.get("readOnlyHint") and verb not in ("get", "list"):
            return plan.reject(
                f"semantics cannot be read from the spec: the name says {verb} but the server "
                "marks the tool read-only"
            )
        if not entity:
            entity = out_entity
        if not entity and noun and verb in ("create", "update", "delete"):
            entity = self.new_noun_entity(noun)
        if (
            not entity
            and noun
            and verb in ("get", "list")
            and not from_description
            and self.scalar_params(tool)
        ):
            entity = self.new_noun_entity(noun)
        if not entity:
            return plan.reject(
                f"semantics cannot be read from the spec: no entity named in {plan.name!r} "
                "or its description matches the theme's data"
            )
        if entity not in self.model.entities:
            stored = self.model.entity(entity)  # or the entity of the same table (data/datum)
            stored.origins.append(f"named by {plan.name}")
            entity = stored.name
        plan.entity = entity
        plan.operation = verb
        if http:
            plan.options["http"] = dict(http)
        plan.kind = "read" if verb in ("get", "list") else "write"
        if verb == "create" and re.search(r"\boverwrit", plan.description, re.I):
            plan.options["upsert"] = True
        if verb == "create" and re.search(
            r"already exists.{0,60}(succeed|silently)", plan.description, re.I
        ):
            plan.options["idempotent"] = True
        if verb == "delete" and re.search(
            r"\band (its|their) (associated|related)", plan.description, re.I
        ):
            plan.options["cascade"] = True
        if verb == "list" and re.search(
            r"\b(tree|recursive|recursively)\b", plan.name + " " + plan.description, re.I
        ):
            plan.options["recursive"] = True
        self.collect_fields(plan, tool)
        return plan

    def answered_entity(self, named: str, answered: str) -> str:
        """The entity a read works on: the one its name or path names, unless the document's
        response body answers rows of another entity that the named one does not describe
        (`GET /v1/balance/history/{id}` answers balance transactions, not the balance)."""
        if answered not in self.model.entities or answered == named:
            return named
        if named not in self.model.entities:
            return answered
        rows = {
            squashed(f) for f, s in self.model.entities[answered].fields.items() if not s.hidden
        }
        mine = {squashed(f) for f, s in self.model.entities[named].fields.items() if not s.hidden}
        return named if rows and len(rows & mine) * 2 >= len(rows) else answered

    def names_entity_itself(self, noun: list[str]) -> bool:
        """Whether a noun phrase is the name of an entity (`places`, `balance transactions`):
        then it means that entity, not a list field of the same name on another one."""
        phrase = "_".join(w for w in noun if w not in QUANTIFIERS)
        return bool(phrase) and singular(phrase) in self.model.entities

    def list_field_entity(self, noun: list[str]) -> tuple[str, str] | None:
        """(entity, field) when the noun names a list field of an entity (observations)."""
        if not noun:
            return None
        phrase = "_".join(w for w in noun if w not in QUANTIFIERS)
        for entity in self.model.entities.values():
            for name, spec in entity.fields.items():
                if spec.type != "array" or snake(name) not in (phrase, plural(phrase)):
                    continue
                others = [
                    n
                    for n, f in entity.fields.items()
                    if n != name and not f.hidden and not bookkeeping(n, f.type)
                ]
                if others:  # else a list envelope (`{violatingSites: [...]}`), no row of its own
                    return entity.name, name
        return None

    def plural_noun(self, noun: list[str], tool: dict) -> bool:
        if not noun:
            return False
        last = [w for w in noun if w not in ("by", "id", "with")]
        word = last[0] if last else noun[0]
        return word != singular(word) and word not in QUANTIFIERS and "multiple" not in noun

    def path_action(self, http: dict) -> tuple[str, list[str]]:
        """What a POST to a row's own path does, read from the path's last word
        (`/invoices/{invoice}/pay`, `/v1/{name}:cancel`): a transition, a verb the tables
        know, or `action:<word>` for an action no row records; with the noun of the row's
        collection. ("", []) when the path ends in a collection (`/lists/{list}/tasks`)."""
        path = str(http.get("path") or "")
        if str(http.get("method") or "").upper() != "POST":
            return "", []
        found = re.search(r"(?:\}/|:)([A-Za-z][A-Za-z0-9_-]*)/?$", path)
        if not found:
            return "", []
        tokens = words(found.group(1))
        before = [
            s
            for s in path[: found.start()].split("/")
            if s and not s.startswith("{") and not VERSION_SEGMENT.fullmatch(s)
        ]
        noun = words(before[-1].split(":")[0]) if before else []
        first = tokens[0]
        if first in TRANSITIONS:
            return f"transition:{first}", noun
        for op, verbs in VERBS.items():
            if first in verbs and op != "create":
                return op, noun
        if first in ACTIONS and len(tokens) == 1:
            return f"action:{first}", noun
        return "", []

    def http_verb(self, http: dict) -> str:
        method = http.get("method", "")
        path = http.get("path", "")
        if method == "GET":
            return "get" if ENDS_IN_ROW.search(path) else "list"
        return {"POST": "create", "PUT": "update", "PATCH": "update", "DELETE": "delete"}.get(
            method, ""
        )

    def scalar_params(self, tool: dict) -> bool:
        props = (tool.get("parameters") or {}).get("properties") or {}
        return bool(props) and all(
            plain_type(s or {}).get("type") in ("string", "integer", "number", "boolean", None)
            for s in props.values()
        )

    def description_entity(self, tool: dict) -> str:
        for token in words(tool.get("description", "")):
            candidate = singular(token)
            if candidate in self.model.entities:
                return candidate
        return ""

    def output_entity(self, tool: dict) -> str:
        out = tool.get("outputSchema") or {}
        for prop, sub in (out.get("properties") or {}).items():
            if (sub or {}).get("type") == "array" and ((sub or {}).get("items") or {}).get(
                "properties"
            ):
                name = entity_name(prop)
                if name in self.model.entities:
                    return name
        return ""

    def outside_world(self, tool: dict) -> str:
        props = (tool.get("parameters") or {}).get("properties") or {}
        for name, schema in props.items():
            fmt = str((schema or {}).get("format", ""))
            if (
                name.lower() in OUTSIDE_PARAMS
                or fmt in ("uri", "url")
                and name.lower() not in ("photo_urls", "photourls")
            ):
                if name.lower() in OUTSIDE_PARAMS:
                    return f"its parameter {name!r} is a URL to reach"
        tokens = words(tool.get("name", ""))
        for token in tokens:
            if token in OUTSIDE_WORDS:
                return f"it {OUTSIDE_WORDS[token]} ({tool['name']})"
            if token in CLOCK_WORDS:
                return f"it reads the wall clock ({tool['name']}), which no fixed database holds"
        description = " ".join(words(tool.get("description", ""))[:12])
        for word, why in (
            ("send", "sends messages"),
            ("fetch", "reads the web"),
            ("url", "reads the web"),
        ):
            if (
                re.search(rf"\b{word}\b", description)
                and word in ("send",)
                and re.search(r"\b(email|e mail|message|sms|reminder)", description)
            ):
                return f"it {why} ({tool['name']})"
        return ""

    def computation(self, tool: dict) -> str:
        """What a tool computes from its arguments ("sum of a and b"), "" when it acts on data.

        A computation is said by its name (`get-sum`, `echo`, `convertUnits`) or its description
        ("Returns the sum of two numbers", "Echoes back the input") and has the shape of one:
        only scalar parameters, none naming an entity of the theme, no entity rows returned.
        "Add a word to the dictionary" names no number, so it stays a create."""
        props = (tool.get("parameters") or {}).get("properties") or {}
        if props and not self.scalar_params(tool):
            return ""
        if self.output_entity(tool) or any(self.names_entity(p) for p in props):
            return ""
        name = str(tool.get("name", ""))
        tokens = words(name[len(self.prefix) :] if self.prefix else name)
        described = " ".join(words(tool.get("description", ""))[:20])
        found = next((COMPUTATIONS[t] for t in tokens[:2] if t in COMPUTATIONS), "")
        verb, _ = self.verb_noun(tool)
        if not found and verb in ("", "get"):  # a data verb in the name says what it does
            found = next(
                (what for pattern, what in COMPUTATION_PHRASES if re.search(pattern, described)),
                "",
            )
        if not found:
            return ""
        names = [str(p) for p in props]
        if found == "echo":
            return "echoes back " + (" and ".join(names) if names else "its input")
        of = " of " + " and ".join(names) if names else ""
        return f"{found}{of}"

    def names_entity(self, param: str) -> bool:
        """A parameter that names an entity of the theme (`word`, `order_id`, `customerName`)."""
        tokens = words(param)
        return any(
            singular("_".join(tokens[i:j])) in self.model.entities
            for i in range(len(tokens))
            for j in range(i + 1, len(tokens) + 1)
        )

    def plan_transition(self, plan: ToolPlan, verb: str, noun: list[str], entity: str) -> ToolPlan:
        entity = entity or (self.new_noun_entity(noun) if noun else "")
        spec = self.model.entities.get(entity)
        if spec is None:
            return plan.reject(
                f"semantics cannot be read from the spec: {verb!r} moves a state, but "
                f"{plan.name!r} names no entity of the theme"
            )
        state = spec.state_field()
        if state is None:
            return plan.reject(
                f"semantics cannot be read from the spec: {verb!r} moves a state, but "
                f"{entity} has no status/state field with a list of values"
            )
        targets = [v for v in TRANSITIONS[verb] if v in state.enum]
        if not targets:
            return plan.reject(
                f"semantics cannot be read from the spec: {entity}.{state.name} has no value "
                f"for {verb!r} (values: {', '.join(map(str, state.enum))})"
            )
        plan.entity, plan.operation, plan.kind = entity, "transition", "write"
        plan.options.update({"column": state.name, "target": targets[0]})
        return plan

    def collect_fields(self, plan: ToolPlan, tool: dict) -> None:
        """Scalar parameters of create/update/list tools are fields of their entity."""
        entity = self.model.entities[plan.entity]
        props = plan.parameters.get("properties") or {}
        required = set(plan.parameters.get("required") or [])
        headers = set((tool.get("http") or {}).get("headers") or [])
        path = str((tool.get("http") or {}).get("path", ""))
        fresh = (  # a read tool names a new entity and no key: its parameters are its fields
            not entity.fields
            and plan.operation == "get"
            and not any(self.key_like(p, entity) for p in props)
        )
        if fresh and len(required) == 1 and not entity.key:
            entity.key = next(iter(required))  # a get by one identifier: that is the key
        for param, schema in props.items():
            schema = schema or {}
            kind = plain_type(schema).get("type")
            lname = param.lower().lstrip("$")  # OData's `$top`, `$skip` page like `top`
            if lname in PAGING or lname in QUERY_NAMES or lname in GLOB_NAMES or lname in MODIFIERS:
                continue
            if plan.operation == "list" and squashed(param) in CURSORS | set(KEY_CURSORS):
                continue  # how a listing pages, not a field of its rows
            if plan.operation == "list" and (filter_lookup(param) or lname in ORDERING_NAMES):
                continue  # `name__ic`, `ordering`: a way to filter or order a field, not one
            if squashed(param) in CREDENTIALS or param in headers:
                continue  # a header is request metadata, not a field of the rows
            if plan.operation not in ("create", "update") and presentation_only(param):
                continue  # OData's `$select`, `$expand`: how the answer looks, not its rows
            if lname.startswith("exclude") or not column_name_ok(param):
                continue  # an exclusion list; a name (`"`, empty) no column can have
            if kind in ("array", "object") and plan.operation not in ("create", "update"):
                continue
            if kind == "array" and (plain_type(schema.get("items") or {})).get("properties"):
                continue
            parent = self.parent_of(param, schema, path, entity)
            if parent and entity.column(param) is None:
                spec = field_from_schema(param, schema)  # `/things/{thing}/events/{event}`
                spec.ref = parent
                entity.add(spec)
                continue
            if (
                plan.operation in ("get", "delete")
                and not self.key_like(param, entity)
                and not fresh
            ):
                continue
            if plan.operation == "list":
                base = self.range_base(param)
                if base:
                    spec = field_from_schema(base, schema)
                    if spec.type == "string":
                        spec.type = "datetime" if "time" in base or "date" in base else spec.type
                    entity.add(spec)
                    continue
            ref = self.reference(param, schema, plan.entity)
            if (
                ref
                and ref == plan.entity
                and words(param)[0] in ("base", "parent", "source", "target")
            ):
                spec = field_from_schema(param, schema, False)
                spec.ref = ref
                entity.add(spec)
                continue
            if ref and ref != plan.entity:
                spec = field_from_schema(
                    param, schema, param in required and plan.operation == "create"
                )
                spec.ref = ref
                entity.add(spec)
                self.ensure_referenced(ref, param, schema)
                continue
            if named_key_column(param, entity) and plan.operation != "create":
                continue
            if (
                plan.operation != "create"
                and not fresh
                and entity.column(param) is None
                and self.names_row(param, entity, path)
            ):
                continue  # the row's own key, whatever the parameter is called
            if kind == "array" and plan.operation == "list":
                continue
            if plan.operation == "update" and param not in entity.fields:
                # a field only an update names: kept if the update binds (bind() decides)
                plan.options.setdefault("pending_fields", {})[param] = schema
                continue
            spec = field_from_schema(
                param, schema, param in required and plan.operation == "create"
            )
            entity.add(spec)

    def range_base(self, param: str) -> str:
        tokens = words(param)
        if len(tokens) >= 2 and tokens[0] in (
            "start",
            "end",
            "min",
            "max",
            "from",
            "until",
            "since",
            "before",
            "after",
        ):
            return "_".join(tokens[1:])
        if len(tokens) >= 2 and tokens[-1] in (
            "from",
            "to",
            "min",
            "max",
            "after",
            "before",
            "since",
        ):
            return "_".join(tokens[:-1])
        return ""

    def names_row(self, param: str, entity: EntitySpec, path: str) -> bool:
        """Whether a path parameter names the row of the entity itself: it is named like the
        entity (`{account}`, `{petId}`, `{thing_name}`), or it is the last parameter and follows
        the entity's collection (`/subscriptions/{subscription_exposed_id}`,
        `/bank_accounts/{id}` of a bank account)."""
        tokens, own = words(param), words(entity.name)
        if tokens == own or (
            len(tokens) == len(own) + 1
            and tokens[: len(own)] == own
            and tokens[-1] in ("id", "key", "name", "code", "slug", "uuid")
        ):
            return True
        segments = [s for s in path.split("?")[0].split("/") if s]
        marker = "{" + param + "}"
        params = [s for s in segments if s.startswith("{")]
        if marker not in segments or params[-1] != marker:
            return False
        before = segments[segments.index(marker) - 1] if segments.index(marker) else ""
        if not before or before.startswith("{"):
            return False
        collection, name = singular(snake(before)), snake(entity.name)
        return collection == name or name.endswith("_" + collection)

    def parent_of(self, param: str, schema: dict, path: str, entity: EntitySpec) -> str:
        """The entity a path parameter names when it is not this entity's row but the row it
        belongs to (`{thing}` of `/things/{thing}/events/{event}`): a reference the rows keep."""
        if "{" + param + "}" not in path or self.names_row(param, entity, path):
            return ""
        named = self.spelled_entity(singular(snake(param)))
        if named and named != entity.name:
            return named
        return self.reference(param, schema, entity.name)

    def spelled_entity(self, name: str) -> str:
        """The entity `name` names, however its words are joined (`tasklist`: task_list)."""
        if name in self.model.entities:
            return name
        return next((e for e in self.model.entities if squashed(e) == squashed(name)), "")

    def keyed_by_strings(self, entity: EntitySpec) -> None:
        """The document names the entity's rows by a string in its paths (`/issues/{issueId}`
        typed string): a key the builder made up as a hidden integer becomes a string the
        rows show, so a call can name a row with the value the document's type allows."""
        spec = entity.fields.get(entity.key)
        if spec is not None and spec.hidden and spec.type == "integer":
            spec.type, spec.hidden = "string", False
            entity.origins.append(f"{entity.key} is a string: the document's paths name rows so")

    def keys_with(self, param: str, schema: dict, entity: EntitySpec) -> bool:
        """Whether a parameter's values can be the entity's key (a hidden surrogate key is an
        integer: a string parameter cannot name it)."""
        spec = entity.fields.get(entity.key)
        if spec is None:
            return False
        kind = plain_type(all_of(schema or {})).get("type")
        return not spec.hidden or kind == "integer"

    def key_like(self, param: str, entity: EntitySpec) -> bool:
        return named_key_column(param, entity) is not None or param.lower() in KEY_NAMES

    def reference(self, param: str, schema: dict, own: str) -> str:
        tokens = words(param)
        if len(tokens) >= 2 and tokens[-1] in ("id", "name", "path", "key", "code"):
            target = singular("_".join(tokens[:-1]))
            known = target in self.model.entities or tokens[-1] in ("id", "path", "key")
            if target != own and target and known:
                return target
        if (
            len(tokens) >= 2
            and tokens[0] in ("base", "parent", "source", "target")
            and singular("_".join(tokens[1:])) == own
        ):
            return own
        text = str(schema.get("description", "")).lower()
        match = re.search(
            r"\b(?:name|id|key) of the ([a-z ]+?)\b(?: where| that| to| from|$|\.)", text
        )
        if match:
            target = entity_name(match.group(1))
            if target in self.model.entities and target != own:
                return target
        return ""

    def ensure_referenced(self, ref: str, param: str, schema: dict) -> None:
        target = self.model.entity(ref)
        if f"referenced by {param}" not in target.origins:
            target.origins.append(f"referenced by {param}")
        key_name = param if words(param)[-1] not in ("id",) else "id"
        if not target.key and target.column(key_name) is None:
            spec = field_from_schema(key_name, schema, True)
            spec.ref = ""
            added = target.add(spec)
            if added.type in ("integer", "string"):
                target.key = added.name

    # -- binding parameters to columns --
    def bind(self, plan: ToolPlan, tool: dict) -> None:
        entity = self.model.entities[plan.entity]
        choose_key(entity)
        pending = plan.options.pop("pending_fields", {})
        added = [p for p in pending if p not in entity.fields]
        for param in added:
            entity.add(field_from_schema(param, pending[param]))
        self.bind_params(plan, tool, entity)
        if plan.rejected:
            for param in added:
                entity.fields.pop(param, None)

    def bind_params(self, plan: ToolPlan, tool: dict, entity: EntitySpec) -> None:
        props = plan.parameters.get("properties") or {}
        required = set(plan.parameters.get("required") or [])
        if plan.derived_parameters:
            self.derive_parameters(plan, entity)
            props = plan.parameters.get("properties") or {}
            required = set(plan.parameters.get("required") or [])
        op = plan.operation
        headers = set((plan.options.get("http") or {}).get("headers") or [])
        for param, schema in props.items():
            role = self.role(plan, entity, param, schema or {})
            if role is None and param in headers:
                plan.bindings[param] = ["ignored"]
                plan.notes.append(
                    f"header {param!r} is accepted: it carries request metadata, which the "
                    f"offline {entity.name} rows do not hold"
                )
                continue
            if role is None:
                if param in required:
                    plan.reject(
                        f"semantics cannot be read from the spec: the required parameter "
                        f"{param!r} has no counterpart in {entity.name} "
                        f"(fields: {', '.join(n for n, f in entity.fields.items() if not f.hidden)})"
                    )
                    return
                plan.bindings[param] = self.unbound_optional(plan, entity, param, schema or {})
                continue
            plan.bindings[param] = role
        roles = [r[0] for r in plan.bindings.values()]
        if op in ("get", "list") and "keys" in roles:
            plan.operation = op = "get_many"
        if op == "delete" and ("keys" in roles or "items" in roles):
            plan.operation = op = "batch_delete"
        if op == "create" and "items" in roles:
            plan.operation = op = "batch_create"
        if op in ("create", "update") and "list_items" in roles:
            plan.operation = op = "append"
        if op == "delete" and "list_items" in roles:
            plan.operation = op = "remove"
        singleton = plan.options.get("one_row") and all(
            r in ("filter", "unsupported", "ignored", "credential") for r in roles
        )  # the document answers one object and no parameter names a row: `GET /v1/balance`
        if op == "get" and not props and not singleton:
            plan.operation = op = "list"
        if op in ("get", "update", "delete", "transition") and "key" not in roles:
            if op == "get" and (
                singleton
                or "filter" in roles
                and all(r in ("filter", "unsupported") for r in roles)
            ):
                plan.operation = "get_by_fields"
            else:
                plan.reject(
                    f"semantics cannot be read from the spec: {op} needs the {entity.name}'s key "
                    f"({entity.key or 'none'}) and no parameter gives it"
                )
                return
        if op == "update" and not any(r in ("field",) for r in roles):
            plan.reject(
                f"semantics cannot be read from the spec: update of {entity.name} names no field "
                "to change"
            )
            return
        if op == "create" and plan.operation == "create" and "field" not in roles:
            plan.reject(
                f"semantics cannot be read from the spec: create of {entity.name} takes no field"
            )
            return
        plan.output = self.output_shape(plan, tool, entity)
        if plan.output.get("mode") == "plain" and plan.response_schema:
            self.envelope(plan, entity)
        if plan.operation == "list" and not any(
            r[0] in FILTER_ROLES for r in plan.bindings.values()
        ):
            if set(plan.output.get("multi", {})):
                plan.operation = "dump"

    def role(self, plan: ToolPlan, entity: EntitySpec, param: str, schema: dict) -> list | None:
        lname = param.lower().lstrip("$")  # OData's `$top`, `$skip` page like `top`
        if squashed(lname) in CREDENTIALS and param not in entity.fields:
            return ["credential"]  # accepted: the offline environment checks no credentials
        plain = plain_type(all_of(schema))
        if isinstance(plain.get("enum"), list) and len(plain["enum"]) == 1 and param != entity.key:
            return ["credential"]  # a value the document fixes (a routing header): no data
        kind = plain.get("type")
        op = plan.operation
        key = entity.key
        if op == "list":
            if lname in PAGING and kind in ("integer", "number"):
                return [PAGING[lname]]
            if squashed(param) in CURSORS and kind in ("string", "integer", None):
                return ["cursor"]
            if (
                squashed(param) in KEY_CURSORS
                and kind in ("string", "integer", None)
                and key
                and plain.get("format") not in ("date", "date-time")
            ):
                return [KEY_CURSORS[squashed(param)], key]
            if lname in QUERY_NAMES and kind in ("string", None):
                return ["query", entity.text_fields()]
            if lname in ORDERING_NAMES and self.orders_by_field(plain, entity):
                return ["order"]
            lookup = filter_lookup(param) if kind in (*SCALARS, "boolean", None) else None
            looked_up = entity.column(lookup[0]) if lookup else None
            if looked_up is not None and looked_up.type not in ("array", "object"):
                return ["lookup", looked_up.name, lookup[1]]
            if looked_up is not None and looked_up.type == "object" and lookup[1] == "n":
                return ["member", looked_up.name, "n"]  # `tenant__n=acme`: another tenant
            if lname in GLOB_NAMES and _path_key(entity):
                return ["glob", key]
            if lname.startswith("exclude") and kind == "array" and _path_key(entity):
                return ["exclude", key]
        path_params = re.findall(
            r"\{([^}]+)\}", str((plan.options.get("http") or {}).get("path", ""))
        )
        if op in ("get", "update", "delete", "transition") and path_params:
            path = str((plan.options.get("http") or {}).get("path", ""))
            if param in path_params:
                column = named_key_column(param, entity) or (
                    param if param in entity.fields else None
                )
                if column == key and kind == "string":
                    self.keyed_by_strings(entity)
                if column is None and self.names_row(param, entity, path):
                    if self.keys_with(param, schema, entity):
                        return ["key", key]
                named = [p for p in path_params if p != param and self.names_row(p, entity, path)]
                if column and named and column != key:
                    return ["filter", column]  # a parent's key (`/accounts/{account}/...`)
                if column:
                    return ["key", column]
            elif op == "update" and param in entity.fields:
                return ["field", param]
        if op in ("create", "update") and param in entity.fields and param != key:
            return ["field", param]
        if kind == "array":
            items = plain_type(plain.get("items") or {})
            if items.get("properties"):
                owner = None
                if plan.options.get("list_field"):
                    owner = self.list_field_owner(entity_name(plan.options["list_field"]), items)
                owner = owner or self.list_field_owner(entity_name(param), items)
                if (
                    owner is not None
                    and owner[0].name == plan.entity
                    and op in ("create", "update", "delete")
                ):
                    _, target, ref, values = owner
                    return ["list_items", target, ref, values]
                item_entity = entity_name(param)
                item_props = set(items.get("properties") or {})
                fits = len(item_props & set(entity.fields)) * 2 > len(item_props)
                if (item_entity == plan.entity or fits) and op in ("create", "delete"):
                    columns = [p for p in (items.get("properties") or {}) if p in entity.fields]
                    if columns:
                        return ["items", columns]
                return None
            # an array of keys: paths, names, entityNames, petIds
            singular_param = singular(snake(param))
            if (
                key
                and op in ("get", "list", "delete")
                and (
                    singular_param == snake(key)
                    or singular_param == f"{snake(entity.name)}_{snake(key)}"
                )
            ):
                return ["keys", key]
            if op in ("create", "update") and param in entity.fields:
                return ["field", param]
            if op == "list":
                column = _listed_column(param, entity)
                if column is not None:
                    return ["filter_in", column]
            return None
        key_column = named_key_column(param, entity)
        if key_column is None and key and param == key:
            key_column = key
        if key_column is None and key and lname in KEY_NAMES and lname == key.lower():
            key_column = key
        if (
            key_column is None
            and op in ("get", "update", "delete", "transition")
            and param in entity.fields
            and (
                lname in KEY_NAMES
                or "{" + param + "}" in str((plan.options.get("http") or {}).get("path", ""))
            )
        ):
            key_column = param
        if key_column is not None and key_column in entity.fields:
            if op == "list" and _path_key(entity):
                return ["under", key_column]
            if op == "list":
                return ["filter", key_column]
            if op == "create":
                return ["field", key_column]
            return ["key", key_column]
        if op == "list":
            base = self.range_base(param)
            if base and base in entity.fields:
                first = words(param)[0]
                low = first in ("start", "min", "from", "since", "after") or words(param)[-1] in (
                    "from",
                    "min",
                    "after",
                    "since",
                )
                return ["range_min" if low else "range_max", base]
        if param in entity.fields:
            if op in ("create", "update"):
                return ["field", param]
            if op == "list" and entity.fields[param].type == "object" and kind in SCALARS:
                return ["member", param]  # `tenant=acme`: one of the nested object's values
            if op in ("list",):
                return ["filter", param]
            if op in ("get",):
                return ["filter", param]
        return None

    def orders_by_field(self, schema: dict, entity: EntitySpec) -> bool:
        """Whether a sort parameter says an order the rows have: free text, an enum of the
        entity's fields (`-name` descending) or of directions (`asc`, `desc`: by key); not
        `newest`/`oldest`, which name an order no column holds."""
        if schema.get("type") not in ("string", None):
            return False
        listed = schema.get("enum") if isinstance(schema.get("enum"), list) else []
        return all(
            str(v).lower() in SORT_DIRECTIONS or entity.column(str(v).lstrip("-+")) is not None
            for v in listed
        )

    def unbound_optional(
        self, plan: ToolPlan, entity: EntitySpec, param: str, schema: dict
    ) -> list:
        """An optional parameter no column answers: data a create or update is given (a list
        of items, an object) is kept as a JSON field of the row; one that only shapes how the
        answer is presented (`expand`, `fields`) is accepted and changes nothing here. Any
        other would change the answer in a way the offline tool does not implement (`tail` of
        a file, a delete's proration): it stays refused, and the contract check says so."""
        kind = plain_type(all_of(schema)).get("type")
        if plan.operation in ("create", "update") and kind in ("array", "object"):
            if entity.column(param) is None:
                entity.add(field_from_schema(param, schema))
            column = entity.column(param)
            if column is not None and column.type in ("array", "object") and not column.hidden:
                plan.notes.append(f"optional parameter {param!r} is kept as given on the row")
                return ["field", column.name]
        if presentation_only(param):
            plan.notes.append(
                f"optional parameter {param!r} only shapes how the answer is presented; it is "
                "accepted and changes nothing here"
            )
            return ["ignored"]
        plan.notes.append(f"optional parameter {param!r} is refused when given")
        return ["unsupported"]

    def output_shape(self, plan: ToolPlan, tool: dict, entity: EntitySpec) -> dict:
        out = tool.get("outputSchema") or {}
        props = out.get("properties") or {}
        if not props:
            return {"mode": "plain"}
        multi = {}
        for prop, sub in props.items():
            items = (sub or {}).get("items") or {}
            if (sub or {}).get("type") == "array" and items.get("properties"):
                name = entity_name(prop)
                if name in self.model.entities:
                    multi[prop] = name
        if multi and plan.entity in multi.values():
            return {"mode": "multi", "multi": multi}
        if set(props) >= {"success", "message"}:
            return {"mode": "status"}
        strings = [p for p, s in props.items() if (s or {}).get("type") == "string"]
        if len(props) == 1 and strings:
            prop = strings[0]
            return {"mode": "text", "prop": prop, "column": prop if prop in entity.fields else ""}
        arrays = [p for p, s in props.items() if (s or {}).get("type") == "array"]
        if len(props) == 1 and arrays:
            item_props = list(((props[arrays[0]] or {}).get("items") or {}).get("properties") or {})
            return {"mode": "wrap", "prop": arrays[0], "item_props": item_props}
        return {"mode": "plain"}

    def envelope(self, plan: ToolPlan, entity: EntitySpec) -> None:
        """The document's response body around the rows, when the tool answers rows."""
        if plan.operation in MANY_ROWS:
            many = True
        elif plan.operation in ONE_ROW:
            many = False
        else:
            return
        fields = {n for n, f in entity.fields.items() if not f.hidden}
        deleting = plan.operation == "delete"
        envelope = read_envelope(
            plan.response_schema, entity.name, fields, many, plan.name, deleting
        )
        if envelope is None or envelope.bare:
            return
        plan.envelope = envelope
        plan.output = {"mode": "envelope"}
        if envelope.rows:
            plan.notes.append(f"answers in the document's envelope: rows under {envelope.where()}")

    def derive_parameters(self, plan: ToolPlan, entity: EntitySpec) -> None:
        """A PRD feature has no parameter schema: give it the one its operation needs."""
        props: dict[str, dict] = {}
        required: list[str] = []
        visible = {n: f for n, f in entity.fields.items() if not f.hidden}

        def prop(spec: FieldSpec) -> dict:
            out: dict[str, Any] = {
                "type": spec.type if spec.type not in ("date", "datetime") else "string"
            }
            if spec.type in ("date", "datetime"):
                out["format"] = "date" if spec.type == "date" else "date-time"
            if spec.type == "array":
                out["items"] = {"type": spec.items or "string"}
            if spec.enum and spec.type != "array":
                out["enum"] = list(spec.enum)
            if spec.type == "object":
                out = {"type": "object"}
            out["description"] = spec.description or f"The {entity.name}'s {spec.name}."
            return out

        op = plan.operation
        key = entity.key
        if op in ("get", "delete", "transition", "update") and key:
            props[key] = prop(entity.fields[key])
            required.append(key)
        if op == "update":
            for name, spec in visible.items():
                if name != key and spec.type != "object" and entity.state_field() is not spec:
                    props[name] = prop(spec)
        if op == "create":
            for name, spec in visible.items():
                if spec.type == "object" or (
                    entity.fields[name].name == key and _integer_key(entity)
                ):
                    continue
                props[name] = prop(spec)
                if spec.required or name == key:
                    required.append(name)
        if op == "list":
            for name, spec in visible.items():
                if spec.type in ("string",) and (spec.enum or spec.ref):
                    props[name] = prop(spec)
            if entity.text_fields():
                props["query"] = {
                    "type": "string",
                    "description": f"Words to find in the {entity.name}'s "
                    f"{', '.join(entity.text_fields()[:4])}.",
                }
            props["limit"] = {"type": "integer", "description": "Most rows to return (default 20)."}
        plan.parameters = {"type": "object", "properties": props, "required": required}
        plan.notes.append("parameters derived from the entity (the PRD gives none)")


def presentation_only(param: str) -> bool:
    """A parameter that only shapes how an answer is presented (`fields`, OData's `$select`)."""
    return squashed(param) in PRESENTATION or squashed(param).startswith("embed")


def _listed_column(param: str, entity: EntitySpec) -> str | None:
    """The scalar column an array parameter lists values of (`lookup_keys` -> lookup_key,
    `types` -> type, `ResourceArnList` -> ResourceArn), else None."""
    tokens = words(param)
    if len(tokens) > 1 and tokens[-1] in ("list", "set", "array", "values"):
        tokens = tokens[:-1]
    wanted = {squashed(param), squashed(singular("_".join(tokens)))}
    for name, spec in entity.fields.items():
        if squashed(name) in wanted and spec.type not in ("array", "object") and not spec.hidden:
            return name
    return None


def _path_key(entity: EntitySpec) -> bool:
    return bool(entity.key) and (
        entity.key.lower() == "path" or snake(entity.key).endswith("_path")
    )


def _integer_key(entity: EntitySpec) -> bool:
    spec = entity.fields.get(entity.key)
    return spec is not None and spec.type == "integer"


def _common_prefix(names: list[str]) -> str:
    """A prefix most tool names share (`git_`), stripped before reading verbs."""
    prefixes: dict[str, int] = {}
    for name in names:
        head, sep, _ = name.partition("_")
        if sep:
            prefixes[head + "_"] = prefixes.get(head + "_", 0) + 1
    if not prefixes or len(names) < 3:
        return ""
    prefix, count = max(prefixes.items(), key=lambda item: item[1])
    if count >= 0.6 * len(names) and not any(prefix[:-1] in verbs for verbs in VERBS.values()):
        return prefix
    return ""


def choose_key(entity: EntitySpec) -> None:
    """The key: a declared one, else id / <entity>_id / path / name ...; else a hidden id.
    Only an integer or string field can be a key (a boolean or object one repeats itself)."""
    if entity.key in entity.fields and entity.fields[entity.key].type in ("integer", "string"):
        return
    ent = snake(entity.name)
    candidates = [n for n, f in entity.fields.items() if f.type in ("integer", "string")]
    for name in candidates:
        if snake(name) in (f"{ent}_id", f"{ent}_name", f"{ent}_path", f"{ent}_key"):
            entity.key = name
            return
    for wanted in KEY_NAMES:
        for name in candidates:
            if name.lower() == wanted and not entity.fields[name].ref:
                entity.key = name
                return
    surrogate = next(n for n in ("id", "row_id", "_row_id", "_aw_row_id") if not entity.column(n))
    entity.key = surrogate
    entity.fields = {surrogate: FieldSpec(surrogate, "integer", hidden=True), **entity.fields}
