# Agent-World image: web (gunicorn), Celery workers and beat share it.
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 \
    AW_VAR_DIR=/var/lib/agent-world AW_STORAGE_ROOT=/var/lib/agent-world/storage

RUN apt-get update && apt-get install -y --no-install-recommends build-essential libpq5 git \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --create-home --uid 1000 agentworld

WORKDIR /app
COPY pyproject.toml README.md ./
COPY aw_site aw_site
COPY environments environments
COPY tasks tasks
COPY training training
COPY serving serving
COPY arena arena
# CPU torch by default; GPU images pass --build-arg TORCH_SPEC="torch==2.13.0" with a CUDA index.
ARG TORCH_SPEC="torch==2.13.0"
ARG TORCH_INDEX="https://download.pytorch.org/whl/cpu"
RUN pip install --index-url "$TORCH_INDEX" "$TORCH_SPEC" && pip install .
COPY manage.py ./
COPY templates templates
COPY static static
RUN mkdir -p /var/lib/agent-world && chown -R agentworld /var/lib/agent-world \
    && python manage.py collectstatic --noinput -v0

USER agentworld
EXPOSE 8000
CMD ["gunicorn", "aw_site.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "3", "--timeout", "120"]
