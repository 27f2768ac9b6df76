"""Task synthesis, verifiers and rewards (plain Python; Django wraps it elsewhere)."""
