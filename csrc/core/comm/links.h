/*
 * links.h -- the link table: the peak bandwidth of the links collectives
 * travel over, one row per link with its source (link_table.c is data
 * only), and the lookups that pick a row for a process group.
 *
 * Two scopes:
 *   - INTRA (within a node): the device-to-device link of a peak-table
 *     device (gpu_table.h's display name): NVLink of a given generation and
 *     link count (SXM / OAM parts, NVL bridged pairs), AMD Infinity Fabric
 *     (xGMI), or, for PCIe cards, the card's PCIe generation at x16;
 *   - INTER (between nodes): a network port as the operating system reports
 *     it (/sys/class/infiniband/<hca>/ports/<p>/rate and link_layer):
 *     InfiniBand by signalling rate (EDR, HDR, NDR, XDR), RoCE on Ethernet
 *     by its speed.
 *
 * Units: bytes per second *per direction* (a datasheet's bidirectional
 * "900 GB/s" is 450e9 here): nccl-tests' bus bandwidth is a one-direction
 * rate and is compared with this figure (comm.h). GB = 1e9 bytes; network
 * rates in Gb/s = 1e9 bits per second.
 *
 * A process group is intra-node when all its ranks share a host, inter-node
 * otherwise (the caller decides; mfu_tracker/distributed/_links.py). An
 * inter-node rank's share of the node's ports is mfu_link_share().
 *
 * A device or a port the table lacks is MFU_ERR_NOT_FOUND: the caller
 * leaves the figure out (one warning), never takes another row.
 */
#ifndef MFU_LINKS_H
#define MFU_LINKS_H

#include <stddef.h>

#include "mfu_status.h"

typedef enum mfu_link_kind {
    MFU_LINK_NVLINK,
    MFU_LINK_XGMI,       /* AMD Infinity Fabric between GPUs */
    MFU_LINK_PCIE,
    MFU_LINK_INFINIBAND,
    MFU_LINK_ROCE,
    MFU_LINK_KIND_COUNT
} mfu_link_kind;

typedef enum mfu_link_scope {
    MFU_LINK_INTRA, /* between the devices of one node */
    MFU_LINK_INTER  /* a node's network port */
} mfu_link_scope;

typedef struct mfu_link {
    const char *name;        /* INTRA: the device's display name (gpu_table.h);
                                INTER: "InfiniBand NDR", "RoCE 400GbE" */
    mfu_link_scope scope;
    mfu_link_kind kind;
    const char *link;        /* the link itself: "NVLink 4 (18 links)",
                                "PCIe 4.0 x16", "InfiniBand NDR 4X" */
    int generation;          /* NVLink / xGMI / PCIe generation; 0 = network */
    double rate_gbps;        /* INTER: the port rate the OS reports, Gb/s;
                                0 for INTRA rows */
    double bytes_per_sec;    /* peak per direction, per device (INTRA) or
                                per port (INTER) */
    const char *source;      /* datasheet / specification + URL */
} mfu_link;

/* "nvlink", "xgmi", "pcie", "infiniband", "roce"; NULL out of range. */
const char *mfu_link_kind_name(mfu_link_kind kind);

/* Number of rows, and row `index` (MFU_ERR_INVALID_ARGUMENT out of range). */
size_t mfu_link_count(void);
mfu_status mfu_link_get(size_t index, const mfu_link **out);

/* The intra-node link of the peak-table device `device_name` (its display
 * name, compared exactly). MFU_ERR_INVALID_ARGUMENT: NULL; NOT_FOUND: a
 * device without a row. */
mfu_status mfu_link_intra(const char *device_name, const mfu_link **out);

/* The network row of a port: `link_layer` as the OS writes it
 * ("InfiniBand" or "Ethernet", case ignored, surrounding blanks ignored) and
 * its rate in Gb/s (matched to 0.1%). INVALID_ARGUMENT: NULL, an unknown
 * layer, a rate not finite > 0; NOT_FOUND: no row at that rate. */
mfu_status mfu_link_inter(const char *link_layer, double rate_gbps, const mfu_link **out);

/* The rate in a sysfs `rate` file ("400 Gb/sec (4X NDR)"): the leading
 * number in Gb/s, blanks before it ignored. Reads at most `size` bytes of
 * `text` (which need not be NUL-terminated). INVALID_ARGUMENT: no number,
 * a number not finite > 0, or a unit other than "Gb/sec". */
mfu_status mfu_link_parse_rate(const char *text, size_t size, double *rate_gbps);

/* One rank's share of a node's network: `ports` ports of `bytes_per_sec`
 * each, shared by the `ranks` ranks on the node: ports x bytes / ranks. NaN
 * unless bytes_per_sec is finite > 0 and ports, ranks >= 1. */
double mfu_link_share(double bytes_per_sec, int ports, int ranks);

#endif /* MFU_LINKS_H */
