"""Tests of mfu_tracker/tracker (a package, so file names may repeat across folders)."""
