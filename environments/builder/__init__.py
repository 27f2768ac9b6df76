"""One build entry point: a typed request, one stage runner for every origin, one job.

- request.py         BuildRequest (origin source | upload | theme | mcp), CategoryPath, options,
                     EnvironmentSpec, and the built-in sources read from sources.json
- dispatch.py        a submission (REST API or the console's form) read into a validated request
- submit.py          validate a request (and its upload) and queue the `environments.build` job;
                     the REST API, the console and `manage.py build_environment` all go through it
- uploads.py         uploads under AW_STORAGE_ROOT/uploads/<uuid>/, the probe, cleanup
- stages.py          the stage runner: ingest -> schema -> tools -> verify -> publish, typed stage
                     results, the yield of each stage, BuildFailed naming the stage
- publish.py         the publish stage: verified tools and the database as one package
- pipeline.py        the ingest and tools stages of data builds (built-in sources, uploaded files)
- theme_pipeline.py  the ingest and tools stages of theme builds (theme_reading, theme_data,
                     theme_tools, theme_prelude read a theme and implement its tools)
- theme_model.py     what a theme says, as types: FieldSpec, EntitySpec, ToolPlan, ThemeModel
- theme_reading.py   read_theme: a theme read into a ThemeModel (the entry), theme_tools
- theme_openapi.py   entities from an OpenAPI document's components/schemas ($ref resolved)
- theme_prd.py       entities from a PRD's markdown headings, tables and bullets
- theme_plans.py     one ToolPlan per theme tool: operation kind, parameter bindings, rejections
- theme_verbs.py     the word tables: operation verbs, transitions, outside-world and paging words
- complexify.py      the ingest and tools stages of a complexified version of an environment
"""
