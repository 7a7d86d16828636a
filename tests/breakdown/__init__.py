"""Tests of mfu_tracker/breakdown (a package, so file names may repeat across folders)."""
