"""Tests of mfu_tracker/cli/report (a package, so file names may repeat across folders)."""
