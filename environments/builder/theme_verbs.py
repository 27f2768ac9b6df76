"""The word tables that tell what a theme tool does and what each of its parameters is.

Operation verbs of tool names and of descriptions, the state each transition verb moves an
entity to, the words and parameters that mean the outside world (a URL, e-mail, the clock, a
shell), and the names of key, paging, modifier, query and glob parameters. `theme_plans` reads
tools with them.
"""

KEY_NAMES = ("id", "uuid", "path", "key", "code", "slug", "sha", "revision", "name", "username")
VERBS = {
    "get": {"get", "read", "show", "open", "retrieve", "describe", "view", "fetch", "load"},
    "list": {"list", "search", "find", "query", "browse", "filter", "lookup", "display"},
    "create": {"create", "add", "new", "insert", "register", "write", "post", "make", "place"},
    "update": {
        "update",
        "edit",
        "modify",
        "set",
        "change",
        "patch",
        "rename",
        "replace",
        "put",
        "move",
    },
    "delete": {"delete", "remove", "drop", "destroy", "purge", "erase", "del"},
}
DESCRIPTION_VERBS = {
    "get": {"get", "gets", "read", "reads", "retrieve", "retrieves", "return", "returns", "open"},
    "show": {"show", "shows", "display", "displays", "view"},
    "list": {"list", "lists", "search", "searches", "find", "finds"},
    "create": {"create", "creates", "add", "adds", "record", "records", "register", "registers"},
    "update": {"update", "updates", "edit", "edits", "modify", "modifies", "change", "changes"},
    "delete": {"delete", "deletes", "remove", "removes"},
}
# verb -> the state values it moves an entity to (first one the data knows wins)
TRANSITIONS = {
    "cancel": ("cancelled", "canceled"),
    "approve": ("approved",),
    "reject": ("rejected",),
    "close": ("closed",),
    "reopen": ("open", "reopened"),
    "archive": ("archived",),
    "complete": ("completed", "complete", "done"),
    "finish": ("finished", "done", "completed"),
    "activate": ("active", "activated"),
    "deactivate": ("inactive", "deactivated"),
    "publish": ("published",),
    "ship": ("shipped",),
    "deliver": ("delivered",),
    "confirm": ("confirmed",),
    "start": ("started", "in_progress", "active"),
    "pause": ("paused",),
    "resume": ("active", "resumed"),
    "lock": ("locked",),
    "unlock": ("unlocked",),
    "borrow": ("borrowed", "on_loan", "loaned", "checked_out"),
    "lend": ("borrowed", "on_loan", "loaned", "checked_out"),
    "return": ("returned", "available"),
    "checkout": ("checked_out", "borrowed"),
    "sell": ("sold",),
    "reserve": ("reserved",),
    "block": ("blocked",),
    "suspend": ("suspended",),
    "resolve": ("resolved",),
    "assign": ("assigned",),
    "pay": ("paid",),
    "refund": ("refunded",),
    "fulfill": ("fulfilled",),
    "adopt": ("adopted",),
    "renew": ("renewed",),
    "retire": ("retired",),
    "escalate": ("escalated",),
}
# the last word of a POST path after a row's key (`/lists/{tasklist}/clear`, `/jobs/{id}:run`)
# that makes the call an action on that row, not the creation of one: what each does, in words
ACTIONS = {
    "clear": "empties what the row holds",
    "reset": "puts the row back to a state the document does not give",
    "copy": "duplicates the row with what the service derives",
    "clone": "duplicates the row with what the service derives",
    "duplicate": "duplicates the row with what the service derives",
    "send": "sends something out of the environment",
    "resend": "sends something out of the environment",
    "run": "runs a job whose outcome the document does not give",
    "rerun": "runs a job whose outcome the document does not give",
    "execute": "runs a job whose outcome the document does not give",
    "trigger": "runs a job whose outcome the document does not give",
    "invoke": "runs a job whose outcome the document does not give",
    "test": "tests the row against the outside world",
    "validate": "checks the row and answers a verdict the document does not give",
    "verify": "checks the row and answers a verdict the document does not give",
    "restart": "restarts a running service",
    "reboot": "restarts a running service",
    "stop": "stops a running service",
    "sync": "synchronises with the outside world",
    "refresh": "synchronises with the outside world",
    "retry": "repeats a failed operation of the outside world",
    "rollback": "undoes a change whose earlier state the document does not give",
    "undo": "undoes a change whose earlier state the document does not give",
    "revert": "undoes a change whose earlier state the document does not give",
    "deploy": "deploys to the outside world",
    "merge": "merges rows by rules the document does not give",
    "rotate": "issues new credentials",
    "regenerate": "issues new credentials",
    "generate": "generates content by rules the document does not give",
    "import": "imports data from outside the environment",
    "export": "exports data out of the environment",
    "upload": "takes a binary file upload, which no JSON argument carries",
    "download": "downloads from the network",
    "preview": "renders a preview the document does not give",
    "render": "renders a preview the document does not give",
    "estimate": "computes an estimate from its arguments",
    "calculate": "computes a result from its arguments",
    "translate": "translates text, a computation",
    "analyze": "analyses content, a computation",
    "analyse": "analyses content, a computation",
    "detect": "analyses content, a computation",
    "predict": "predicts with a model",
    "classify": "classifies with a model",
}
OUTSIDE_PARAMS = {"url", "uri", "urls", "endpoint", "webhook", "link", "href", "website"}
OUTSIDE_WORDS = {
    "email": "sends e-mail",
    "emails": "sends e-mail",
    "mail": "sends e-mail",
    "sms": "sends text messages",
    "notify": "notifies people outside the environment",
    "notification": "notifies people outside the environment",
    "reminder": "notifies people outside the environment",
    "reminders": "notifies people outside the environment",
    "webpage": "reads the web",
    "web": "reads the web",
    "internet": "reads the web",
    "download": "downloads from the network",
    "http": "calls the network",
    "shell": "runs shell commands",
    "execute": "runs commands",
    "command": "runs commands",
    "login": "opens an authentication session, which no database row holds",
    "logout": "closes an authentication session, which no database row holds",
    "signin": "opens an authentication session, which no database row holds",
    "auth": "authenticates against the outside world",
    "token": "issues credentials",
    "upload": "takes a binary file upload, which no JSON argument carries",
}
# a tool named by one of these (first words of its name) computes from its arguments
COMPUTATIONS = {
    "sum": "sum",
    "multiply": "product",
    "product": "product",
    "divide": "quotient",
    "subtract": "difference",
    "calculate": "calculation",
    "calc": "calculation",
    "compute": "calculation",
    "convert": "conversion",
    "echo": "echo",
    "random": "random value",
    "hash": "hash",
    "checksum": "hash",
    "uppercase": "formatted string",
    "lowercase": "formatted string",
}
# ... or described by one of these (over the first words of its description)
COMPUTATION_PHRASES = (
    (r"\b(sum|total) of (two|the|a|\d+|these|its|all)\b.*\bnumbers?\b", "sum"),
    (r"\bsum of\b", "sum"),
    (r"\b(add|adds|adding)\b.{0,30}\bnumbers?\b", "sum"),
    (r"\b(multipl(y|ies|ied|ying|ication)|product of)\b", "product"),
    (r"\b(divides?|quotient of)\b", "quotient"),
    (r"\bsubtract\w*\b", "difference"),
    (r"\b(calculates?|computes?)\b", "calculation"),
    (r"\bconverts?\b.{0,40}\b(to|into)\b", "conversion"),
    (r"\becho(es|ed)?\b", "echo"),
    (r"\brandom(ly)?\b", "random value"),
    (r"\b(hash|checksum|digest) (of|for)\b", "hash"),
    (r"\bformats? (a|the)? ?(string|text|number|date|message)\b", "formatted string"),
)
# credentials a client sends with a call (header or query): accepted, never checked offline
CREDENTIALS = {
    "apikey",
    "xapikey",
    "authorization",
    "accesstoken",
    "authtoken",
    "bearer",
    # AWS Signature Version 4, sent by every client of an AWS API
    "xamzcontentsha256",
    "xamzdate",
    "xamzalgorithm",
    "xamzcredential",
    "xamzsecuritytoken",
    "xamzsignature",
    "xamzsignedheaders",
}
CLOCK_WORDS = {"current", "now", "today"}
PAGING = {
    "limit": "limit",
    "max_count": "limit",
    "maxcount": "limit",
    "max_results": "limit",
    "maxresults": "limit",
    "page_size": "limit",
    "pagesize": "limit",
    "top": "limit",
    "count": "limit",
    "offset": "offset",
    "skip": "offset",
    "start": "offset",
    "page": "page",
    "page_number": "page",
    "pagenumber": "page",
    "currentpage": "page",
    "current_page": "page",
}
# a page token a listing gives back to resume it (letters and digits only, lower-case)
CURSORS = {
    "cursor",
    "nexttoken",
    "pagetoken",
    "nextpagetoken",
    "marker",
    "continuationtoken",
    "skiptoken",
    "startingtoken",
    "pagecursor",
    "nextcursor",
}
# a listing resumed after (or before) the row with the key given (Stripe's starting_after)
KEY_CURSORS = {
    "startingafter": "after_key",
    "startafter": "after_key",
    "after": "after_key",
    "endingbefore": "before_key",
    "before": "before_key",
}
MODIFIERS = {
    "dryrun",
    "dry_run",
    "preview",
    "verbose",
    "force",
    "sortby",
    "sort_by",
    "order",
    "order_by",
    "orderby",
    "ascending",
    "descending",
    "format",
    "encoding",
    "pretty",
    "context_lines",
    "contextlines",
    "depth",
}
# parameters that only shape how an answer is presented, never which rows or values it holds
# (letters and digits only, lower-case; `embed…` too): accepted, and they change nothing here
PRESENTATION = {
    "expand",
    "fields",
    "select",
    "pretty",
    "prettyprint",
    "alt",
    "callback",
    "xgafv",
    "embed",
    "embedmetadata",
    "includefields",
    "responsefields",
}
QUERY_NAMES = {"query", "q", "search", "keyword", "keywords", "text", "term"}
# a listing's order by field name (`name`, `-name` descending): REST framework's `ordering`
ORDERING_NAMES = {"ordering", "sort", "sortby", "sort_by", "orderby", "order_by"}
# django-filter's lookups (NetBox and other REST framework APIs): `name__ic` is `name`
# containing a text in any case, `id__gte` a lower bound, `slug__n` "not this value"
FILTER_LOOKUPS = {
    "n", "ic", "nic", "isw", "nisw", "iew", "niew", "ie", "nie", "empty", "lt", "lte", "gt", "gte"
}  # fmt: skip


def filter_lookup(param: str) -> tuple[str, str] | None:
    """(field, lookup) of a django-filter parameter (`name__ic` -> ("name", "ic")), else None."""
    field, separator, lookup = param.rpartition("__")
    if separator and field and lookup in FILTER_LOOKUPS:
        return field, lookup
    return None


GLOB_NAMES = {"pattern", "glob"}
