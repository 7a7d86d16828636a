"""Print the directory holding the real ``nvml.h`` the fake NVML is compiled
against: the ``nvidia-nvml-dev`` package of the test extras (installed by the
Makefile's set-up, so cached in the venv and found offline afterwards).
Exit 1, saying how to get it, when it is not installed."""
from __future__ import annotations

import sys
from importlib import metadata
from pathlib import Path
from typing import Optional

DISTRIBUTION = "nvidia-nvml-dev"


def include_dir() -> Optional[Path]:
    """The folder of the installed package's nvml.h, or None."""
    try:
        dist = metadata.distribution(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return None
    for file in dist.files or ():
        if file.name == "nvml.h":
            return Path(str(dist.locate_file(file))).resolve().parent
    return None


if __name__ == "__main__":
    found = include_dir()
    if found is None:
        sys.exit(f"nvml.h not found: the fake NVML is compiled against the real header of the "
                 f"{DISTRIBUTION} package: pip install '{DISTRIBUTION}' (part of the test extras)")
    print(found)
