"""Tests of mfu_tracker/cli/doctor (a package, so file names may repeat across folders)."""
