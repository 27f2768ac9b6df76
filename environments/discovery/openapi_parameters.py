"""Which parameters of an OpenAPI document say what a call asks, and which only carry a
credential or say how the request travels and its answer is presented.

The second kind never becomes a tool parameter, a table column or words in a task: the offline
environment checks no credential and answers in one format. Headers are judged by name
(`Authorization`, `Content-Type`); query parameters by the document itself: a credential its
security schemes name, a well-known credential name (`access_token`, `oauth_token`), or one of
the document's standard parameters, the same optional query parameters it attaches to (nearly)
every operation and no schema of its own describes (Google's `alt`, `fields`, `key`,
`prettyPrint`, `quotaUser`, `$.xgafv` ...). A tool's notes and the theme's provenance say which
were left out and why.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from environments.discovery.openapi_refs import follow_ref

from .naming import squashed

# headers that carry a credential or say how a request travels (lower-case)
CREDENTIAL_HEADERS = {
    "authorization",
    "proxy-authorization",
    "x-api-key",
    "api-key",
    "apikey",
    "x-auth-token",
    "x-access-token",
    "ocp-apim-subscription-key",
    "x-amz-content-sha256",
    "x-amz-date",
    "x-amz-algorithm",
    "x-amz-credential",
    "x-amz-security-token",
    "x-amz-signature",
    "x-amz-signedheaders",
}
TRANSPORT_HEADERS = {
    "content-type",
    "content-length",
    "content-encoding",
    "content-md5",
    "accept",
    "accept-encoding",
    "accept-charset",
    "user-agent",
    "host",
    "connection",
    "cache-control",
}
# query parameters that carry a credential whatever the document (squashed)
CREDENTIAL_QUERY = {"accesstoken", "oauthtoken", "apikey", "xapikey", "authtoken", "apisecret",
                    "clientsecret", "appsecret", "apitoken"}  # fmt: skip
# query parameters only a transport layer reads (JSON error format, pretty printing, quota
# attribution, upload protocol): left out wherever they appear (squashed)
TRANSPORT_QUERY = {"xgafv", "prettyprint", "quotauser", "uploadprotocol", "uploadtype"}
# query parameters or headers that name the version of the API that answers (Azure's required
# `api-version`, `x-ms-version`): the offline environment is one version (squashed)
VERSION_PARAMETERS = {"apiversion", "xmsversion", "xapiversion"}
# parameters that ask only whether the caller may make the call, without making it (AWS's
# `DryRun`): the offline environment checks no permission, so a dry run has nothing to ask
PERMISSION_CHECKS = {"dryrun"}
# names that are transport or presentation when the document attaches them to every operation,
# and may be real parameters otherwise (a `callback` URL, a `fields` filter, a map's `key`)
SHARED_TRANSPORT_QUERY = {"alt", "callback", "fields", "key", "format", "pp"}
NEARLY_EVERY = 0.9  # the share of operations a document-wide parameter is attached to


@dataclass
class DocumentParameters:
    """What one document says about its parameters, read once for all its operations."""

    api_keys: set[str] = field(default_factory=set)  # lower-case names its schemes name
    standard: set[str] = field(default_factory=set)  # its document-wide query parameters
    sent_always: set[str] = field(default_factory=set)  # its document-wide headers


def read_document_parameters(
    doc: dict, operations: list[tuple[str, dict, dict]]
) -> DocumentParameters:
    """The api-key names and document-wide query parameters of `doc`, whose operations are
    given as (method, operation, path item) with their references already followed.

    A query parameter is document-wide when it is optional, attached to nearly every operation
    and named by no schema's property; then it is a standard parameter when its name is a
    well-known transport one (`alt`, `fields`, `key` ...) or it rides on reads and writes alike
    in a document of several operations (a search's `q` is on its reads only)."""
    found = DocumentParameters(api_keys=_api_key_names(doc))
    if not operations:
        return found
    seen: Counter[str] = Counter()
    headers: Counter[str] = Counter()
    optional: dict[str, bool] = {}
    methods: dict[str, set[str]] = {}
    for method, op, item in operations:
        names, sent = set(), set()
        for param in _parameters(doc, op, item):
            if param.get("in") == "header" and param.get("name"):
                sent.add(str(param["name"]))
            if param.get("in") == "query" and param.get("name"):
                name = str(param["name"])
                names.add(name)
                optional[name] = optional.get(name, True) and not param.get("required")
                methods.setdefault(name, set()).add("read" if method == "get" else "write")
        seen.update(names)
        headers.update(sent)
    described = _schema_properties(doc)
    if len(operations) >= 4:  # a header on (nearly) every call: how the client is known
        found.sent_always = {
            name for name, count in headers.items() if count >= NEARLY_EVERY * len(operations)
        }
    for name, count in seen.items():
        if count < NEARLY_EVERY * len(operations) or not optional.get(name):
            continue
        if squashed(name) in described:  # a field of the data, asked by its name
            continue
        everywhere = len(operations) >= 4 and methods[name] == {"read", "write"}
        if squashed(name) in SHARED_TRANSPORT_QUERY or everywhere:
            found.standard.add(name)
    return found


def left_out(name: str, where: str, param: dict, document: DocumentParameters) -> tuple[str, str]:
    """(why, kind) a parameter is not a tool parameter, kind "credential", "transport",
    "version" or "permission";
    ("", "") when it is one."""
    lowered, plain = name.lower(), squashed(name)
    description = str(param.get("description") or "").lower()
    credential = (
        lowered in document.api_keys
        or (where == "header" and lowered in CREDENTIAL_HEADERS)
        or (where == "query" and plain in CREDENTIAL_QUERY)
        or (where == "query" and plain == "key" and "api key" in description)
    )
    if credential:
        return (
            f"{where or 'the'} parameter {name!r} is left out: it carries a credential, which "
            "the offline environment does not check",
            "credential",
        )
    names_version = plain in VERSION_PARAMETERS or (
        where == "header" and version_header(lowered, description)
    )
    if where in ("query", "header") and names_version:
        return (
            f"{where} parameter {name!r} is left out: it names the version of the API that "
            "answers, and the offline environment is one version",
            "version",
        )
    if where in ("query", "header") and plain in PERMISSION_CHECKS:
        return (
            f"{where} parameter {name!r} is left out: it asks only whether the caller may make "
            "the call, and the offline environment checks no permission",
            "permission",
        )
    if where == "header" and name in document.sent_always and lowered not in TRANSPORT_HEADERS:
        return (
            f"header {name!r} is left out: the document sends it with every call, request "
            "metadata (a credential, an account, a client), not what the call asks",
            "credential",
        )
    if where == "header" and lowered in TRANSPORT_HEADERS:
        return (
            f"header {name!r} is left out: it says how the request travels, not what it asks",
            "transport",
        )
    if where == "query" and (plain in TRANSPORT_QUERY or name in document.standard):
        if name in document.standard and plain == "key":
            why = "it carries a credential, which the offline environment does not check"
            return f"query parameter {name!r} is left out: {why}", "credential"
        return transport_note([name]), "transport"
    return "", ""


# what a `...-version` header names when it is no version of the API: a row's own version
VERSIONED_THINGS = ("artifact", "resource", "project", "record", "entity", "etag", "object")


def version_header(lowered: str, description: str) -> bool:
    """A header that picks the version of the API that answers (`trakt-api-version`,
    `Notion-Version`, `carbone-version`, `accept-version`), not one that names a version of
    a row (`x-registry-version` of an artifact, `If-Version`)."""
    if lowered.startswith("if-") or not lowered.endswith("version") or "-" not in lowered:
        return False
    if lowered.endswith("api-version") or lowered.replace("-", "").endswith("apiversion"):
        return True
    return not any(word in lowered or word in description for word in VERSIONED_THINGS)


def transport_note(names: list[str]) -> str:
    """One note for the standard query parameters a tool leaves out, named together."""
    quoted = ", ".join(repr(n) for n in names)
    one = len(names) == 1
    return (
        f"query parameter{'' if one else 's'} {quoted} {'is' if one else 'are'} left out: "
        "the document's standard parameters, which say how the request travels or the answer "
        "is presented, not what the call asks"
    )


def _parameters(doc: dict, op: dict, item: dict) -> list[dict]:
    listed = [p for p in (op.get("parameters"), item.get("parameters")) if isinstance(p, list)]
    return [p for p in (follow_ref(p, doc) for g in listed for p in g) if p]


def _schema_properties(doc: dict) -> set[str]:
    """Every property name (squashed) any `components/schemas` object declares, one level."""
    components = doc.get("components") if isinstance(doc.get("components"), dict) else {}
    schemas = components.get("schemas") if isinstance(components, dict) else None
    names: set[str] = set()
    for schema in (schemas or {}).values() if isinstance(schemas, dict) else ():
        props = schema.get("properties") if isinstance(schema, dict) else None
        if isinstance(props, dict):
            names.update(squashed(p) for p in props)
    return names


def _api_key_names(doc: dict) -> set[str]:
    """Parameter names the document's security schemes say carry an API key (lower-case)."""
    components = doc.get("components") if isinstance(doc.get("components"), dict) else {}
    schemes = components.get("securitySchemes") if isinstance(components, dict) else None
    names = set()
    for scheme in (schemes or {}).values() if isinstance(schemes, dict) else ():
        if isinstance(scheme, dict) and scheme.get("type") == "apiKey" and scheme.get("name"):
            names.add(str(scheme["name"]).lower())
    return names
