"""Tests of mfu_tracker/cli/view (a package, so file names may repeat across folders)."""
