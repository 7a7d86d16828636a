"""The mixed-install refusal (mfu_tracker/_install.py): the peer package's
files and metadata found in a site directory, and the commands it prints."""
from __future__ import annotations

import json

from mfu_tracker._install import (DISTRIBUTION, PEER_DISTRIBUTION, extra_install, find_peer,
                                  installed_from, mixed_install_message, reinstall_command)


def _dist_info(site, name, version, folder="mfu_tracker-0.3.0.dist-info"):
    path = site / folder
    path.mkdir()
    (path / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    return path


def test_a_clean_site_has_no_peer(tmp_path):
    (tmp_path / "mfu_tracker").mkdir()
    assert find_peer(tmp_path / "mfu_tracker") == []


def test_the_peers_metadata_and_its_own_files_are_found(tmp_path):
    package = tmp_path / "mfu_tracker"
    package.mkdir()
    (package / "tracker.py").write_text("")  # a file only the peer ships
    dist = _dist_info(tmp_path, "MFU_Tracker", "0.3.0")  # names compare normalized
    found = find_peer(package)
    assert found == [f"{PEER_DISTRIBUTION} 0.3.0 ({dist})", str(package / "tracker.py")]


def test_another_distribution_of_that_folder_name_is_not_the_peer(tmp_path):
    (tmp_path / "mfu_tracker").mkdir()
    _dist_info(tmp_path, "something-else", "1.0")
    assert find_peer(tmp_path / "mfu_tracker") == []


def test_the_reinstall_command_names_the_checkout_it_came_from(tmp_path):
    source = tmp_path / "checkout"
    source.mkdir()
    (source / "pyproject.toml").write_text("")
    site = tmp_path / "site"
    site.mkdir()
    dist = _dist_info(site, DISTRIBUTION, "0.1.0", folder="torch_mfu-0.1.0.dist-info")
    (dist / "direct_url.json").write_text(json.dumps({"url": source.as_uri()}))
    assert installed_from(site) == source
    assert reinstall_command(site) == f"pip install {source}"
    assert reinstall_command(tmp_path) == f"pip install <your checkout of {DISTRIBUTION}>"


def test_the_message_names_both_packages_and_the_fix(tmp_path):
    message = mixed_install_message(tmp_path / "mfu_tracker", ["tracker.py"])
    assert f"pip uninstall -y {PEER_DISTRIBUTION} {DISTRIBUTION}" in message
    assert "tracker.py" in message and str(tmp_path / "mfu_tracker") in message


def test_an_extra_is_installed_from_what_the_metadata_lists(monkeypatch):
    import importlib.metadata
    monkeypatch.setattr(importlib.metadata, "requires",
                        lambda name: ["torch", 'matplotlib>=3.5; extra == "report"'])
    assert extra_install("report") == "pip install 'matplotlib>=3.5'"
    # an extra the metadata does not list: the checkout with the extra
    assert extra_install("nothing").endswith("[nothing]'")
