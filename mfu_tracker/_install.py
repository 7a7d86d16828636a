"""Refuse a mixed install: this project and the pure-Python ``mfu-tracker``
package in one ``mfu_tracker/`` directory.

Both install the import package ``mfu_tracker`` (this project is a drop-in
superset of the peer's API, under the distribution name ``torch-mfu``), and
pip keeps them apart only by distribution name: installing one after the
other writes the second's files over the first's, and uninstalling either
later deletes files the other needs. The peer's 0.3.0 wheel installs
``mfu_tracker/{__init__,flops,gpu,optim,tracker}.py``,
``mfu_tracker/integrations/{__init__,hf_trainer}.py`` and
``mfu_tracker-0.3.0.dist-info``.

:func:`check_single_install` runs first in ``mfu_tracker/__init__.py`` (ours
over the peer) and in ``mfu_tracker/flops/__init__.py`` (the peer over ours:
its ``__init__.py`` then replaces ours and begins with ``from .flops import``,
which Python resolves to our ``flops/`` package, not the peer's ``flops.py``).
Either way the import fails with the fix. Cost: one directory scan of the
site directory, once per process.

The package is not on an index yet, so a message that recommends an install
names what works from where the user is (:func:`extra_install`,
:func:`reinstall_command`): an extra's own requirements, or the directory
this installation came from.
"""
from __future__ import annotations

import json
import re
import shlex
import urllib.parse
from pathlib import Path
from typing import List, Optional

#: This project's distribution name on the package index (PyPI, checked free
#: on 2026-11-24) and the peer's; both install the import package mfu_tracker.
DISTRIBUTION = "torch-mfu"
PEER_DISTRIBUTION = "mfu-tracker"

#: Files of the peer that this project does not have (its modules where we
#: have packages): one of them in our directory means the peer wrote there.
PEER_ONLY_FILES = ("flops.py", "tracker.py")

_checked = False


def _metadata_field(dist_info: Path, field: str) -> Optional[str]:
    try:
        with open(dist_info / "METADATA", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if not line.strip():
                    break  # the headers end at the first blank line
                key, _, value = line.partition(":")
                if key.strip().lower() == field.lower():
                    return value.strip()
    except OSError:
        return None
    return None


def _normalized(name: str) -> str:
    return name.strip().lower().replace("_", "-").replace(".", "-")


def find_peer(package_dir: Path) -> List[str]:
    """What of the peer is in the site directory holding ``package_dir``:
    "mfu-tracker 0.3.0 (<dist-info>)" per installed peer distribution, and
    "<file>" per peer-only file in ``package_dir``. Empty when none."""
    found = []
    site = package_dir.parent
    try:
        candidates = sorted(site.glob("mfu_tracker-*.dist-info"))
    except OSError:
        candidates = []
    for dist_info in candidates:
        name = _metadata_field(dist_info, "Name") or ""
        if _normalized(name) == PEER_DISTRIBUTION:
            version = _metadata_field(dist_info, "Version") or "?"
            found.append(f"{PEER_DISTRIBUTION} {version} ({dist_info})")
    found += [str(package_dir / f) for f in PEER_ONLY_FILES if (package_dir / f).is_file()]
    return found


def installed_from(site: Path) -> Optional[Path]:
    """The local directory this project's installation in ``site`` was
    installed from (its dist-info's ``direct_url.json``, PEP 610), or None."""
    for dist_info in sorted(site.glob(f"{DISTRIBUTION.replace('-', '_')}-*.dist-info")):
        try:
            url = json.loads((dist_info / "direct_url.json").read_text(encoding="utf-8"))["url"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if isinstance(url, str) and url.startswith("file://"):
            source = Path(urllib.parse.unquote(urllib.parse.urlparse(url).path))
            if (source / "pyproject.toml").is_file():
                return source
    return None


def reinstall_command(site: Path) -> str:
    """``pip install <the directory it came from>`` (or a placeholder naming it)."""
    source = installed_from(site)
    return (f"pip install {shlex.quote(str(source))}" if source is not None
            else f"pip install <your checkout of {DISTRIBUTION}>")


def extra_install(extra: str) -> str:
    """The command that installs the optional extra ``extra`` ("report",
    "hf", ...): its requirements as this installation's metadata lists them
    (``pip install 'matplotlib>=3.5'``: works wherever the package came
    from); without metadata (a source tree on the path), the checkout with
    the extra."""
    try:
        from importlib.metadata import requires

        listed = requires(DISTRIBUTION) or []
    except Exception:  # noqa: BLE001 -- not installed, or unreadable metadata
        listed = []
    marker = re.compile(rf"""extra\s*==\s*["']{re.escape(extra)}["']""")
    wanted = [spec.split(";")[0].strip() for spec in listed if marker.search(spec)]
    if wanted:
        return "pip install " + " ".join(shlex.quote(spec) for spec in wanted)
    checkout = Path(__file__).resolve().parent.parent
    where = str(checkout) if (checkout / "pyproject.toml").is_file() else \
        f"<your checkout of {DISTRIBUTION}>"
    return f"pip install {shlex.quote(f'{where}[{extra}]')}"


def mixed_install_message(package_dir: Path, peer: List[str]) -> str:
    """The error text: what was found and the one command that fixes it."""
    return (
        f"mfu_tracker: two packages are installed into one directory, {package_dir}: "
        f"{DISTRIBUTION} (this project) and the pure-Python {PEER_DISTRIBUTION} package, which "
        f"has the same import name ({'; '.join(peer)}). The second one installed wrote over "
        "the first one's files, and uninstalling either deletes files the other needs. Remove "
        "both, then install one: "
        f"pip uninstall -y {PEER_DISTRIBUTION} {DISTRIBUTION} && "
        f"{reinstall_command(package_dir.parent)}"
    )


def check_single_install() -> None:
    """Raise ``ImportError`` (with the fix) when the peer shares our directory."""
    global _checked
    if _checked:
        return
    package_dir = Path(__file__).resolve().parent
    peer = find_peer(package_dir)
    if peer:
        raise ImportError(mixed_install_message(package_dir, peer))
    _checked = True
