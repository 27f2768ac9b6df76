"""Settings, all read from environment variables with embedded defaults.

Embedded default (no variables set): SQLite under ``var/``, jobs run by an in-process worker
thread, LLM-free synthesis. Production: ``DATABASE_URL`` (PostgreSQL via psycopg 3) and
``CELERY_BROKER_URL`` (Redis) switch to real services; see README.
"""

from __future__ import annotations

import os
from pathlib import Path

import dj_database_url

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("AW_VAR_DIR", BASE_DIR / "var"))


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


DEBUG = env_bool("AW_DEBUG", False)
SECRET_KEY = os.environ.get("AW_SECRET_KEY", "")
if not SECRET_KEY:
    # A per-checkout key keeps the embedded default safe without configuration.
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    key_file = VAR_DIR / "secret_key"
    if not key_file.exists():
        import secrets

        key_file.write_text(secrets.token_urlsafe(50))
    SECRET_KEY = key_file.read_text().strip()

ALLOWED_HOSTS = [
    h for h in os.environ.get("AW_ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]").split(",") if h
]
CSRF_TRUSTED_ORIGINS = [o for o in os.environ.get("AW_CSRF_TRUSTED_ORIGINS", "").split(",") if o]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "aw_site",
    "environments",
    "tasks",
    "serving",
    "training",
    "arena",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "aw_site.middleware.RequestSizeLimitMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "aw_site.urls"
WSGI_APPLICATION = "aw_site.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "aw_site.roles.role_context",
            ]
        },
    }
]

DATABASE_URL = os.environ.get("DATABASE_URL", "").strip()
SQLITE_OPTIONS = {  # see the embedded default below: concurrent job threads wait, not fail
    "timeout": 30,
    "init_command": "PRAGMA journal_mode=WAL;",
    "transaction_mode": "IMMEDIATE",
}
if DATABASE_URL:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60)}
    if DATABASES["default"]["ENGINE"].endswith("sqlite3"):  # sqlite:///path: the same waits
        DATABASES["default"]["CONN_MAX_AGE"] = 0
        DATABASES["default"].setdefault("OPTIONS", {}).update(SQLITE_OPTIONS)
else:
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": VAR_DIR / "agent_world.sqlite3",
            # IMMEDIATE: a transaction takes the write lock when it begins, so concurrent job
            # threads wait on the busy timeout instead of failing a read-to-write upgrade.
            "OPTIONS": dict(SQLITE_OPTIONS),
        }
    }
DATABASES["default"].setdefault("TEST", {})
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # A file, not memory, so a real Celery worker process can share the test database.
    # One file per test process, so parallel test runs never share it.
    DATABASES["default"]["TEST"]["NAME"] = str(VAR_DIR / f"test_agent_world_{os.getpid()}.sqlite3")
if os.environ.get("AW_TEST_DATABASE_NAME"):
    DATABASES["default"]["TEST"]["NAME"] = os.environ["AW_TEST_DATABASE_NAME"]

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/accounts/login/"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
# WhiteNoise also serves straight from static/ so the embedded default needs no collectstatic.
WHITENOISE_USE_FINDERS = True

# Artifacts: environment packages, checkpoints, exports.
STORAGE_ROOT = Path(os.environ.get("AW_STORAGE_ROOT", VAR_DIR / "storage"))

# Jobs: Celery with a real broker in production; an in-process worker thread otherwise.
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "").strip()
CELERY_RESULT_BACKEND = os.environ.get("CELERY_RESULT_BACKEND", CELERY_BROKER_URL).strip() or None
# Without a broker: "thread" (an in-process executor) by default; "db" (AW_JOBS_MODE=db, set by
# run_embedded) leaves jobs queued in the database for worker processes (manage.py run_job_worker).
AW_JOBS_MODE = (
    "celery"
    if CELERY_BROKER_URL
    else ("db" if os.environ.get("AW_JOBS_MODE", "").strip() == "db" else "thread")
)
AW_JOB_STALE_SECONDS = int(os.environ.get("AW_JOB_STALE_SECONDS", "600"))
AW_JOB_QUEUED_STALE_SECONDS = int(os.environ.get("AW_JOB_QUEUED_STALE_SECONDS", "900"))
AW_JOB_MAX_ATTEMPTS = int(os.environ.get("AW_JOB_MAX_ATTEMPTS", "3"))
# Generated write tools accept only the observed values of a categorical TEXT column with at
# most this many distinct values, at most this many distinct values per row, in a table of at
# least this many rows (environments/discovery/domain_rules.py, "Enumerated columns").
AW_ENUM_MAX_VALUES = int(os.environ.get("AW_ENUM_MAX_VALUES", "12"))
AW_ENUM_MAX_RATIO = float(os.environ.get("AW_ENUM_MAX_RATIO", "0.25"))
AW_ENUM_MIN_ROWS = int(os.environ.get("AW_ENUM_MIN_ROWS", "10"))
AW_MAX_EPISODES = int(os.environ.get("AW_MAX_EPISODES", "256"))
AW_MAX_EPISODES_PER_USER = int(os.environ.get("AW_MAX_EPISODES_PER_USER", "64"))

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["aw_site.roles.HasViewerRole"],
    "DEFAULT_PAGINATION_CLASS": "aw_site.pagination.StandardPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_FILTER_BACKENDS": [
        "django_filters.rest_framework.DjangoFilterBackend",
        "rest_framework.filters.SearchFilter",
        "rest_framework.filters.OrderingFilter",
    ],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "aw_site.api.json_exception_handler",
    # JSON only: the console posts Django forms, never to the API; form/multipart bodies
    # would bypass JSON null checks (a multipart "null" reaches a NOT NULL JSON column).
    "DEFAULT_PARSER_CLASSES": ["aw_site.parsers.SafeJSONParser"],
}
# Numbered API pages stop at this row; deeper reads use keyset ?cursor= pages (aw_site/pagination.py).
AW_API_MAX_PAGE_OFFSET = int(os.environ.get("AW_API_MAX_PAGE_OFFSET", "10000"))
# Request bodies: 10 MiB covers a 5,000-document theme import; larger bodies get a JSON 413.
DATA_UPLOAD_MAX_MEMORY_SIZE = int(os.environ.get("AW_MAX_REQUEST_BYTES", str(10 * 1024 * 1024)))
FILE_UPLOAD_MAX_MEMORY_SIZE = DATA_UPLOAD_MAX_MEMORY_SIZE
DATA_UPLOAD_MAX_NUMBER_FIELDS = 2000
# Uploaded data files (POST /api/environments/build/ multipart, the console's New environment
# page). Django counts only the non-file fields of a multipart body against
# DATA_UPLOAD_MAX_MEMORY_SIZE; the file itself is checked against this limit (by Content-Length
# before parsing, then by its size), and files over FILE_UPLOAD_MAX_MEMORY_SIZE stream to disk.
AW_MAX_UPLOAD_BYTES = int(os.environ.get("AW_MAX_UPLOAD_BYTES", str(200 * 1024 * 1024)))
# An uploaded Agent-World release archive (environments/agent_world/upload.py): files and bytes
# it may unpack to.
AW_MAX_RELEASE_MEMBERS = int(os.environ.get("AW_MAX_RELEASE_MEMBERS", "20000"))
AW_MAX_RELEASE_UNPACKED_BYTES = int(
    os.environ.get("AW_MAX_RELEASE_UNPACKED_BYTES", str(2 * 1024 * 1024 * 1024))
)
SPECTACULAR_SETTINGS = {
    "TITLE": "Agent-World API",
    "DESCRIPTION": "Environments, tasks, training runs and evolution rounds of Agent-World.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # The docs pages load Swagger UI and ReDoc from our own static files (drf-spectacular-sidecar),
    # never a CDN, so they work offline. No validator badge: it would call validator.swagger.io.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "SWAGGER_UI_SETTINGS": {"deepLinking": True, "validatorUrl": None},
    # ReDoc's sticky menu sits below the console's top bar.
    "REDOC_UI_SETTINGS": {"scrollYOffset": "header.topbar"},
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("AW_LOG_LEVEL", "WARNING")},
}
