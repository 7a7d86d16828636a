"""Tests of mfu_tracker/cli (a package, so file names may repeat across folders)."""
