"""One build entry point: a typed request, a staged pipeline, one job.

- request.py   BuildRequest (origin source | upload; later theme, mcp), CategoryPath, options,
               and the built-in sources read from sources.json
- pipeline.py  the stages ingest -> schema -> tools -> verify -> publish, each recording its
               yield; run_pipeline runs them for one request
- uploads.py   uploads under AW_STORAGE_ROOT/uploads/<uuid>/, the probe, cleanup
- submit.py    validate a request (and its upload) and queue the `environments.build` job;
               the REST API, the console and `manage.py build_environment` all go through it
"""
