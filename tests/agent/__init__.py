"""Tests of mfu_tracker/agent (a package, so file names may repeat across folders)."""
