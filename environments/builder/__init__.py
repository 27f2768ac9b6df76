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
- theme_pipeline.py  the ingest and tools stages of theme builds (theme_model, theme_data,
                     theme_tools, theme_prelude read a theme and implement its tools)
- complexify.py      the ingest and tools stages of a complexified version of an environment
"""
