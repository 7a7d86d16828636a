"""The link a process group's collectives travel over, and its peak.

A group is *intra-node* when all its ranks share a host, *inter-node*
otherwise. Intra-node, the link is the device's (the link table's row for
the tracker's peak-table device: NVLink of its generation, Infinity Fabric,
or the card's PCIe generation); inter-node, the node's network ports as the
kernel reports them (``/sys/class/infiniband/<hca>/ports/<n>/{state,
link_layer,rate}``: InfiniBand or RoCE), shared by the node's ranks. The rows
and the arithmetic are the C core's (``csrc/core/comm/link_table.c``, ``links.c``,
reached through ``_C.link_*``); this module only finds the inputs.

``link_bandwidth_gbs=`` (GB/s per direction) replaces every group's peak.
A group whose link is unknown has none: its collectives do not enter
``net_utilization`` (and when none does, the key is absent, with one
warning).

The hosts of every rank are gathered once, when the tracker's own gloo group
is created (``Aggregator``, on every rank alike): no collective of its own
afterwards. A tracker that does not aggregate (``distributed=False``) has no
hosts: its groups' links are unknown unless ``link_bandwidth_gbs`` is given.
"""
from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .._native import _C

#: Where the kernel lists RDMA devices (InfiniBand HCAs and RoCE NICs).
SYSFS_INFINIBAND = Path("/sys/class/infiniband")


def gather_hosts(group: Any, world_size: int) -> Optional[List[str]]:
    """Every rank's host name, by global rank (one all-gather on ``group``,
    the tracker's own); None when it fails (then no group is intra-node)."""
    import torch.distributed as dist

    hosts: List[Any] = [None] * world_size
    try:
        dist.all_gather_object(hosts, host_name(), group=group)
    except Exception:  # noqa: BLE001 -- a fault leaves the links unknown, never the run
        return None
    return [str(h) for h in hosts]


def is_intra_node(group_ranks: Sequence[int], hosts: Optional[Sequence[str]]) -> Optional[bool]:
    """Whether every rank of the group (global ranks) is on one host; None
    when the hosts are unknown."""
    if hosts is None or not group_ranks:
        return None
    try:
        return len({hosts[r] for r in group_ranks}) == 1
    except IndexError:
        return None


def network_ports(root: Path = SYSFS_INFINIBAND) -> Tuple[Optional[float], int, str]:
    """The node's active network ports: (bytes/s per port per direction, the
    number of ports, a description), or (None, 0, why) when there are none
    or they differ or the table lacks their rate."""
    rates: Dict[Tuple[str, float], int] = {}
    try:
        ports = sorted(root.glob("*/ports/*"))
    except OSError as exc:
        return None, 0, f"{root} is unreadable ({exc})"
    for port in ports:
        try:
            if "ACTIVE" not in (port / "state").read_text():
                continue
            layer = (port / "link_layer").read_text().strip()
            rate = _C.link_parse_rate((port / "rate").read_text())
        except (OSError, ValueError):
            continue
        rates[(layer, rate)] = rates.get((layer, rate), 0) + 1
    if not rates:
        return None, 0, f"no active InfiniBand or RoCE port under {root}"
    if len(rates) > 1:
        kinds = ", ".join(f"{n} x {layer} {rate:g} Gb/s" for (layer, rate), n in sorted(rates.items()))
        return None, 0, f"the node's ports differ ({kinds})"
    (layer, rate), count = next(iter(rates.items()))
    try:
        row = _C.link_inter(layer, rate)
    except ValueError:
        row = None
    if row is None:
        return None, 0, f"no link-table row for {layer} at {rate:g} Gb/s"
    return row["bytes_per_sec"], count, f"{count} x {row['link']}"


class GroupLinks:
    """Per process group: its link peak in bytes/s per direction, or None.

    ``device_name``: the tracker's peak-table device (its intra-node link);
    ``hosts``: every rank's host (:func:`gather_hosts`); ``fallback``:
    ``link_bandwidth_gbs`` x 1e9, used for every group when given.
    """

    def __init__(self, device_name: Optional[str], hosts: Optional[Sequence[str]],
                 rank: int, fallback: Optional[float] = None,
                 sysfs_root: Path = SYSFS_INFINIBAND) -> None:
        self.fallback = fallback
        self.hosts = hosts
        self.rank = rank
        intra = _C.link_intra(device_name) if device_name else None
        self.intra = None if intra is None else intra["bytes_per_sec"]
        self.intra_why = (f"the link table has no intra-node link for device {device_name!r}"
                          if device_name else "the device is not a peak-table GPU (a CPU?)")
        self._sysfs_root = sysfs_root
        self._inter: Optional[Tuple[Optional[float], str]] = None  # read on first need
        self.unknown: Dict[str, str] = {}  # group name -> why its link is unknown

    def _inter_node(self) -> Tuple[Optional[float], str]:
        if self._inter is None:
            per_port, ports, why = network_ports(self._sysfs_root)
            local = (sum(1 for h in self.hosts if h == self.hosts[self.rank])
                     if self.hosts is not None and 0 <= self.rank < len(self.hosts) else 1)
            share = None if per_port is None else _C.link_share(per_port, ports, local)
            self._inter = (share, why)
        return self._inter

    def link_of(self, name: str, group_ranks: Sequence[int]) -> Optional[float]:
        """The peak of the group ``name`` with these global ranks (None:
        unknown, the reason kept in :attr:`unknown`)."""
        if self.fallback is not None:
            return self.fallback
        intra = is_intra_node(group_ranks, self.hosts)
        if intra is None:
            self.unknown[name] = "the ranks' hosts are unknown"
            return None
        if intra:
            if self.intra is None:
                self.unknown[name] = self.intra_why
            return self.intra
        share, why = self._inter_node()
        if share is None:
            self.unknown[name] = why
        return share


def process_groups() -> List[Tuple[str, List[int]]]:
    """(name, global ranks) of every process group this rank belongs to."""
    import torch.distributed as dist
    from torch.distributed import distributed_c10d as c10d

    world = getattr(c10d, "_world", None)
    names = getattr(world, "pg_names", None) or {}
    out = []
    for group, name in list(names.items()):
        try:
            ranks = dist.get_process_group_ranks(group)
        except Exception:  # noqa: BLE001 -- a group this rank is not in, or gone
            continue
        out.append((getattr(group, "group_name", name), list(ranks)))
    return out


def host_name() -> str:
    """The host name this rank reports (``MFU_TRACKER_HOSTNAME`` overrides it,
    for tests that lay out nodes on one machine)."""
    return os.environ.get("MFU_TRACKER_HOSTNAME") or socket.gethostname()
