"""Tests of mfu_tracker/timing (a package, so file names may repeat across folders)."""
