"""Tests of mfu_tracker/job (a package, so file names may repeat across folders)."""
