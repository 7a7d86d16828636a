"""mfu_tracker/distributed/_links.py: the link a process group's traffic
travels over -- intra-node by host, the node's network ports read from a
sysfs tree (laid out in a temporary folder, the kernel's file layout), a
node's share of them, the user's fallback."""
from __future__ import annotations

import pytest

from mfu_tracker.distributed._links import GroupLinks, host_name, is_intra_node, network_ports


def port(root, device, number, *, rate="200 Gb/sec (4X HDR)", state="4: ACTIVE",
         layer="InfiniBand"):
    folder = root / device / "ports" / str(number)
    folder.mkdir(parents=True)
    (folder / "rate").write_text(rate + "\n")
    (folder / "state").write_text(state + "\n")
    (folder / "link_layer").write_text(layer + "\n")


def test_is_intra_node():
    hosts = ["a", "a", "b", "b"]
    assert is_intra_node([0, 1], hosts) is True
    assert is_intra_node([1, 2], hosts) is False
    assert is_intra_node([0, 1], None) is None
    assert is_intra_node([0, 9], hosts) is None   # a rank past the hosts known


def test_network_ports_active_ones_of_one_kind(tmp_path):
    port(tmp_path, "mlx5_0", 1)
    port(tmp_path, "mlx5_1", 1)
    port(tmp_path, "mlx5_2", 1, state="1: DOWN")           # not counted
    per_port, count, words = network_ports(tmp_path)
    assert per_port == 200e9 / 8 and count == 2         # 200 Gb/s -> 25e9 bytes/s
    assert words.startswith("2 x InfiniBand")


def test_network_ports_none_or_mixed(tmp_path):
    assert network_ports(tmp_path)[:2] == (None, 0)
    port(tmp_path, "mlx5_0", 1)
    port(tmp_path, "mlx5_1", 1, rate="100 Gb/sec (4X EDR)")
    per_port, count, words = network_ports(tmp_path)
    assert (per_port, count) == (None, 0) and "differ" in words


def test_group_links(tmp_path):
    port(tmp_path, "mlx5_0", 1)
    hosts = ["a", "a", "b", "b"]
    links = GroupLinks("H100 SXM", hosts, rank=0, sysfs_root=tmp_path)
    assert links.link_of("tp", [0, 1]) == links.intra and links.intra > 0  # NVLink row
    # one port shared by the node's two ranks: each gets half of 25e9 bytes/s
    assert links.link_of("dp", [0, 2]) == pytest.approx(25e9 / 2)
    cpu = GroupLinks(None, None, rank=0, sysfs_root=tmp_path)
    assert cpu.link_of("dp", [0, 1]) is None
    assert cpu.unknown == {"dp": "the ranks' hosts are unknown"}
    assert GroupLinks(None, None, rank=0, fallback=5e9).link_of("x", [0]) == 5e9


def test_host_name_override(monkeypatch):
    monkeypatch.setenv("MFU_TRACKER_HOSTNAME", "node7")
    assert host_name() == "node7"
