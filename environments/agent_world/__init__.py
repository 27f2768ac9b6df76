"""The paper's released environments (the Agent-World release format) as environments here.

A release is a folder `environment_mix/` holding, per environment id, a folder of JSON
collections with a README.md, a `<env_id>_step4_checkpoint.json` (metadata, taxonomy, tool
schemas and their Python source) and optionally `questions/<env_id>.json`.

- release.py    reads a release into typed records and refuses a malformed one in words
- taxonomy.py   maps the release's three-level taxonomy onto ours (the release's is kept)
- verify.py     runs every released tool in the sandbox on real rows: it loads, reads change
                nothing but log collections, writes persist; finds the log collections
- pipeline.py   the build of one released environment through the shared stage runner
- package.py    writes the published package (collections, tool sources, manifest)

Their tool code is never imported here: it runs only in the sandbox worker
(environments/runtime/collection_episode.py), against the episode's own copy of the files.
"""
