"""Tests of mfu_tracker/cli/report/panels (a package, so file names may repeat across folders)."""
