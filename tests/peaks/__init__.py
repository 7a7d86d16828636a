"""Tests of mfu_tracker/peaks (a package, so file names may repeat across folders)."""
