"""Environment discovery: from real sources to verified, published environment packages.

- taxonomy.py, themes.py, classify.py   themes from MCP specs / OpenAPI / function schemas /
                                        PRDs, near-duplicates, (primary, secondary, tertiary)
- sources/                              real data -> one SQLite db with keys, links, provenance
- research_agent.py, search_providers.py  LLM research agent (when an LLM is configured)
- complexify.py                         rounds of derived rows, edge cases, cross-table links
- tool_generator.py, tool_prelude.py    schema-driven tools, JSON schemas, tool tests
- tool_design_agent.py, code_safety.py  LLM domain tools, statically checked
- verification.py                       sandbox tests, accuracy threshold, cross-validation
- catalogue.py                          bulk starter-catalogue builder and CLI over the build
                                        pipeline (environments/builder/: request, stages, job)
"""
