/*
 * link_table.c -- the link table (conventions in links.h): one row per
 * device's intra-node link and per network port rate, each with its source.
 *
 * Per-direction figures: datasheets print NVLink and Infinity Fabric as a
 * bidirectional total per GPU ("NVLink: 900GB/s" = 450 GB/s each way) and
 * PCIe as x16 bidirectional ("PCIe Gen4: 64GB/s"); network rates are per
 * direction already (Gb/s / 8 = GB/s).
 *
 * PCIe per direction at x16 (PCI-SIG PCI Express Base Specification 3.0 /
 * 4.0 / 5.0, https://pcisig.com/specifications: 8 / 16 / 32 GT/s per lane,
 * 128b/130b encoding); each PCIe row's source is the card's datasheet,
 * which names its generation: 3.0 8 GT/s x 16 x 128/130 / 8 = 15.754 GB/s,
 * 4.0 16 GT/s = 31.508 GB/s, 5.0 32 GT/s = 63.015 GB/s. A PCIe card's
 * optional NVLink / Infinity Fabric bridge (pairs of A100 PCIe, A40, RTX
 * A6000, H100 PCIe, MI210, ...) is not assumed: its row is the PCIe link
 * every such card has; `link_bandwidth_gbs=` names a bridge.
 *
 * Devices without a row (A10G, H20, GH200, MI250X, MI250, MI300A) have no
 * sourced device-to-device figure here: their link is unknown.
 */
#include "links.h"

#define GBPS 1e9 /* bytes per second in a GB/s */

/* ---- sources --------------------------------------------------------- */

static const char src_p100_sxm2[] =
    "NVIDIA Tesla P100 datasheet (SXM2): NVIDIA NVLink 160 GB/s, "
    "https://images.nvidia.com/content/tesla/pdf/nvidia-tesla-p100-datasheet.pdf";
static const char src_p100_pcie[] =
    "NVIDIA Tesla P100 PCIe datasheet: PCIe Gen3 x16 32 GB/s, "
    "https://images.nvidia.com/content/tesla/pdf/nvidia-tesla-p100-PCIe-datasheet.pdf";
static const char src_v100[] =
    "NVIDIA Tesla V100 datasheet: NVLink 300 GB/s (SXM2), PCIe 32 GB/s, "
    "https://images.nvidia.com/content/technologies/volta/pdf/volta-v100-datasheet-update-us-1165301-r5.pdf";
static const char src_t4[] =
    "NVIDIA T4 Tensor Core GPU datasheet: x16 PCIe Gen3, "
    "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/tesla-t4/t4-tensor-core-datasheet-951643.pdf";
static const char src_a100[] =
    "NVIDIA A100 Tensor Core GPU datasheet: NVIDIA NVLink 600GB/s (SXM), PCIe Gen4 64GB/s, "
    "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf";
static const char src_a800[] =
    "NVIDIA A800 Tensor Core GPU datasheet: NVLink 400GB/s (SXM), PCIe Gen4 64GB/s, "
    "https://www.nvidia.cn/data-center/a800/";
static const char src_a30[] =
    "NVIDIA A30 Tensor Core GPU datasheet: PCIe Gen4 64GB/s, "
    "https://www.nvidia.com/content/dam/en-zz/Solutions/data-center/products/a30-gpu/pdf/a30-datasheet.pdf";
static const char src_a10[] =
    "NVIDIA A10 Tensor Core GPU datasheet: PCIe Gen4 64GB/s, "
    "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a10/pdf/a10-datasheet.pdf";
static const char src_a40[] =
    "NVIDIA A40 datasheet: PCI Express 4.0 x16, "
    "https://images.nvidia.com/content/Solutions/data-center/a40/nvidia-a40-datasheet.pdf";
static const char src_ga102[] =
    "NVIDIA Ampere GA102 GPU Architecture whitepaper v2: PCIe Gen 4 (RTX A6000, GeForce RTX 3090), "
    "https://www.nvidia.com/content/PDF/nvidia-ampere-ga-102-gpu-architecture-whitepaper-v2.pdf";
static const char src_l4[] =
    "NVIDIA L4 Tensor Core GPU datasheet: PCIe Gen4 x16 64GB/s, https://www.nvidia.com/en-us/data-center/l4/";
static const char src_l40[] =
    "NVIDIA L40 GPU datasheet: PCIe Gen4 x16 64GB/s bidirectional, https://www.nvidia.com/en-us/data-center/l40/";
static const char src_l40s[] =
    "NVIDIA L40S GPU datasheet: PCIe Gen4 x16 64GB/s bidirectional, https://www.nvidia.com/en-us/data-center/l40s/";
static const char src_ada[] =
    "NVIDIA Ada GPU Architecture whitepaper: PCIe 4.0 (GeForce RTX 4090 / 4080), "
    "https://images.nvidia.com/aem-dam/Solutions/geforce/ada/nvidia-ada-gpu-architecture.pdf";
static const char src_rtx6000_ada[] =
    "NVIDIA RTX 6000 Ada Generation datasheet: PCIe 4.0 x16, "
    "https://www.nvidia.com/content/dam/en-zz/Solutions/design-visualization/rtx-6000/proviz-rtx-6000-ada-datasheet-2616456-r5.pdf";
static const char src_h100[] =
    "NVIDIA H100 Tensor Core GPU datasheet: NVLink 900GB/s (SXM), NVLink 600GB/s (NVL), PCIe "
    "Gen5 128GB/s, https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet";
static const char src_h800[] =
    "NVIDIA H800 Tensor Core GPU datasheet: NVLink 400GB/s (SXM), PCIe Gen5 128GB/s, "
    "https://www.nvidia.cn/data-center/h800/";
static const char src_h200[] =
    "NVIDIA H200 Tensor Core GPU datasheet: NVLink 900GB/s (SXM), 2- or 4-way NVLink bridge "
    "900GB/s (NVL), https://www.nvidia.com/en-us/data-center/h200/";
static const char src_b200[] =
    "NVIDIA Blackwell datasheet (per-GPU table): fifth-generation NVLink 1.8TB/s, "
    "https://nvdam.widen.net/s/wwnsxrhm2w/blackwell-datasheet-3384703, and HGX B200 / B300 "
    "specifications, https://www.nvidia.com/en-us/data-center/hgx/";
static const char src_gb200[] =
    "NVIDIA GB200 NVL72 / GB300 NVL72 specifications: NVLink 130TB/s per 72 GPUs = 1.8TB/s per GPU, "
    "https://www.nvidia.com/en-us/data-center/gb200-nvl72/";
static const char src_blackwell_rtx[] =
    "NVIDIA RTX Blackwell GPU Architecture whitepaper: PCIe Gen 5 (GeForce RTX 5090, RTX PRO 6000), "
    "https://images.nvidia.com/aem-dam/Solutions/geforce/blackwell/nvidia-rtx-blackwell-gpu-architecture.pdf";
static const char src_mi210[] =
    "AMD Instinct MI210 accelerator specifications: PCIe 4.0 x16, "
    "https://www.amd.com/en/products/accelerators/instinct/mi200/mi210.html";
static const char src_mi300x[] =
    "AMD Instinct MI300X accelerator datasheet: 7 AMD Infinity Fabric links, 128 GB/s peak per "
    "link, https://www.amd.com/en/products/accelerators/instinct/mi300/mi300x.html";
static const char src_mi325x[] =
    "AMD Instinct MI325X accelerator datasheet: 7 AMD Infinity Fabric links, 128 GB/s peak per "
    "link, https://www.amd.com/en/products/accelerators/instinct/mi300/mi325x.html";
static const char src_mi355x[] =
    "AMD Instinct MI350X / MI355X specifications: 7 AMD Infinity Fabric links, 153.6 GB/s peak "
    "per link, https://www.amd.com/en/products/accelerators/instinct/mi350/mi355x.html";
static const char src_infiniband[] =
    "InfiniBand Trade Association, InfiniBand roadmap (4X EDR 100, HDR 200, NDR 400, XDR 800 "
    "Gb/s), https://www.infinibandta.org/infiniband-roadmap/";
static const char src_ethernet[] =
    "IEEE 802.3 Ethernet: 802.3by 25GbE, 802.3cd 50GbE, 802.3ba/bj 100GbE, 802.3bs 200/400GbE, "
    "802.3df 800GbE, https://www.ieee802.org/3/";

/* ---- per-direction figures ------------------------------------------ */

#define PCIE3_X16 (8.0 * 16.0 * 128.0 / 130.0 / 8.0 * GBPS)  /* 15.754 GB/s */
#define PCIE4_X16 (16.0 * 16.0 * 128.0 / 130.0 / 8.0 * GBPS) /* 31.508 GB/s */
#define PCIE5_X16 (32.0 * 16.0 * 128.0 / 130.0 / 8.0 * GBPS) /* 63.015 GB/s */

/* An intra-node row. */
#define DEVICE(device, k, gen, text, bps, src)                                       \
    {.name = (device), .scope = MFU_LINK_INTRA, .kind = (k), .link = (text),           \
     .generation = (gen), .rate_gbps = 0.0, .bytes_per_sec = (bps), .source = (src)}
/* A network port row: `gbps` Gb/s each way. */
#define PORT(row, k, text, gbps, src)                                                 \
    {.name = (row), .scope = MFU_LINK_INTER, .kind = (k), .link = (text),              \
     .generation = 0, .rate_gbps = (gbps), .bytes_per_sec = (gbps) / 8.0 * GBPS,       \
     .source = (src)}

static const mfu_link links[] = {
    /* ---- NVLink: the datasheet's total per GPU / 2 ---- */
    DEVICE("P100 SXM2 16GB", MFU_LINK_NVLINK, 1, "NVLink 1 (4 links)", 80 * GBPS, src_p100_sxm2), /* 160 / 2 */
    DEVICE("V100 SXM2 16GB", MFU_LINK_NVLINK, 2, "NVLink 2 (6 links)", 150 * GBPS, src_v100),     /* 300 / 2 */
    DEVICE("V100 SXM2 32GB", MFU_LINK_NVLINK, 2, "NVLink 2 (6 links)", 150 * GBPS, src_v100),     /* 300 / 2 */
    DEVICE("A100 SXM4 40GB", MFU_LINK_NVLINK, 3, "NVLink 3 (12 links)", 300 * GBPS, src_a100),    /* 600 / 2 */
    DEVICE("A100 SXM4 80GB", MFU_LINK_NVLINK, 3, "NVLink 3 (12 links)", 300 * GBPS, src_a100),    /* 600 / 2 */
    DEVICE("A800 SXM4 80GB", MFU_LINK_NVLINK, 3, "NVLink 3 (8 links)", 200 * GBPS, src_a800),     /* 400 / 2 */
    DEVICE("H100 SXM", MFU_LINK_NVLINK, 4, "NVLink 4 (18 links)", 450 * GBPS, src_h100),          /* 900 / 2 */
    DEVICE("H100 NVL", MFU_LINK_NVLINK, 4, "NVLink 4 bridge (pair)", 300 * GBPS, src_h100),       /* 600 / 2 */
    DEVICE("H800 SXM", MFU_LINK_NVLINK, 4, "NVLink 4 (8 links)", 200 * GBPS, src_h800),           /* 400 / 2 */
    DEVICE("H200 SXM", MFU_LINK_NVLINK, 4, "NVLink 4 (18 links)", 450 * GBPS, src_h200),          /* 900 / 2 */
    DEVICE("H200 NVL", MFU_LINK_NVLINK, 4, "NVLink 4 bridge (2- or 4-way)", 450 * GBPS, src_h200), /* 900 / 2 */
    DEVICE("B200", MFU_LINK_NVLINK, 5, "NVLink 5 (18 links)", 900 * GBPS, src_b200),              /* 1800 / 2 */
    DEVICE("B300", MFU_LINK_NVLINK, 5, "NVLink 5 (18 links)", 900 * GBPS, src_b200),              /* 1800 / 2 */
    DEVICE("GB200", MFU_LINK_NVLINK, 5, "NVLink 5 (18 links)", 900 * GBPS, src_gb200),            /* 130000 / 72 / 2 */
    DEVICE("GB300", MFU_LINK_NVLINK, 5, "NVLink 5 (18 links)", 900 * GBPS, src_gb200),            /* 130000 / 72 / 2 */
    /* ---- AMD Infinity Fabric (xGMI): links x per-link peak / 2 ---- */
    DEVICE("MI300X", MFU_LINK_XGMI, 4, "Infinity Fabric (7 links)", 448 * GBPS, src_mi300x),      /* 7 x 128 / 2 */
    DEVICE("MI325X", MFU_LINK_XGMI, 4, "Infinity Fabric (7 links)", 448 * GBPS, src_mi325x),      /* 7 x 128 / 2 */
    DEVICE("MI350X", MFU_LINK_XGMI, 4, "Infinity Fabric (7 links)", 537.6 * GBPS, src_mi355x),    /* 7 x 153.6 / 2 */
    DEVICE("MI355X", MFU_LINK_XGMI, 4, "Infinity Fabric (7 links)", 537.6 * GBPS, src_mi355x),    /* 7 x 153.6 / 2 */
    /* ---- PCIe cards: their PCIe generation at x16 ---- */
    DEVICE("P100 PCIe 16GB", MFU_LINK_PCIE, 3, "PCIe 3.0 x16", PCIE3_X16, src_p100_pcie),
    DEVICE("P100 PCIe 12GB", MFU_LINK_PCIE, 3, "PCIe 3.0 x16", PCIE3_X16, src_p100_pcie),
    DEVICE("V100 PCIe 16GB", MFU_LINK_PCIE, 3, "PCIe 3.0 x16", PCIE3_X16, src_v100),
    DEVICE("V100 PCIe 32GB", MFU_LINK_PCIE, 3, "PCIe 3.0 x16", PCIE3_X16, src_v100),
    DEVICE("V100S PCIe 32GB", MFU_LINK_PCIE, 3, "PCIe 3.0 x16", PCIE3_X16, src_v100),
    DEVICE("T4", MFU_LINK_PCIE, 3, "PCIe 3.0 x16", PCIE3_X16, src_t4),
    DEVICE("A100 PCIe 40GB", MFU_LINK_PCIE, 4, "PCIe 4.0 x16", PCIE4_X16, src_a100),
    DEVICE("A100 PCIe 80GB", MFU_LINK_PCIE, 4, "PCIe 4.0 x16", PCIE4_X16, src_a100),
    DEVICE("A800 PCIe 80GB", MFU_LINK_PCIE, 4, "PCIe 4.0 x16", PCIE4_X16, src_a800),
    DEVICE("A800 PCIe 40GB", MFU_LINK_PCIE, 4, "PCIe 4.0 x16", PCIE4_X16, src_a800),
    DEVICE("A30", MFU_LINK_PCIE, 4, "PCIe 4.0 x16", PCIE4_X16, src_a30),
    DEVICE("A10", MFU_LINK_PCIE, 4, "PCIe 4.0 x16", PCIE4_X16, src_a10),
    DEVICE("A40", MFU_LINK_PCIE, 4, "PCIe 4.0 x16", PCIE4_X16, src_a40),
    DEVICE("RTX A6000", MFU_LINK_PCIE, 4, "PCIe 4.0 x16", PCIE4_X16, src_ga102),
    DEVICE("GeForce RTX 3090", MFU_LINK_PCIE, 4, "PCIe 4.0 x16", PCIE4_X16, src_ga102),
    DEVICE("L4", MFU_LINK_PCIE, 4, "PCIe 4.0 x16", PCIE4_X16, src_l4),
    DEVICE("L40", MFU_LINK_PCIE, 4, "PCIe 4.0 x16", PCIE4_X16, src_l40),
    DEVICE("L40S", MFU_LINK_PCIE, 4, "PCIe 4.0 x16", PCIE4_X16, src_l40s),
    DEVICE("GeForce RTX 4090", MFU_LINK_PCIE, 4, "PCIe 4.0 x16", PCIE4_X16, src_ada),
    DEVICE("GeForce RTX 4080", MFU_LINK_PCIE, 4, "PCIe 4.0 x16", PCIE4_X16, src_ada),
    DEVICE("RTX 6000 Ada Generation", MFU_LINK_PCIE, 4, "PCIe 4.0 x16", PCIE4_X16, src_rtx6000_ada),
    DEVICE("MI210", MFU_LINK_PCIE, 4, "PCIe 4.0 x16", PCIE4_X16, src_mi210),
    DEVICE("H100 PCIe", MFU_LINK_PCIE, 5, "PCIe 5.0 x16", PCIE5_X16, src_h100),
    DEVICE("H800 PCIe", MFU_LINK_PCIE, 5, "PCIe 5.0 x16", PCIE5_X16, src_h800),
    DEVICE("GeForce RTX 5090", MFU_LINK_PCIE, 5, "PCIe 5.0 x16", PCIE5_X16, src_blackwell_rtx),
    DEVICE("RTX PRO 6000 Blackwell", MFU_LINK_PCIE, 5, "PCIe 5.0 x16", PCIE5_X16, src_blackwell_rtx),
    /* ---- network ports: the rate sysfs reports, Gb/s ---- */
    PORT("InfiniBand EDR", MFU_LINK_INFINIBAND, "InfiniBand 4X EDR (or 2X HDR100)", 100.0, src_infiniband),
    PORT("InfiniBand HDR", MFU_LINK_INFINIBAND, "InfiniBand 4X HDR (or 2X NDR200)", 200.0, src_infiniband),
    PORT("InfiniBand NDR", MFU_LINK_INFINIBAND, "InfiniBand 4X NDR", 400.0, src_infiniband),
    PORT("InfiniBand XDR", MFU_LINK_INFINIBAND, "InfiniBand 4X XDR", 800.0, src_infiniband),
    PORT("RoCE 25GbE", MFU_LINK_ROCE, "RoCE on 25 Gb/s Ethernet", 25.0, src_ethernet),
    PORT("RoCE 50GbE", MFU_LINK_ROCE, "RoCE on 50 Gb/s Ethernet", 50.0, src_ethernet),
    PORT("RoCE 100GbE", MFU_LINK_ROCE, "RoCE on 100 Gb/s Ethernet", 100.0, src_ethernet),
    PORT("RoCE 200GbE", MFU_LINK_ROCE, "RoCE on 200 Gb/s Ethernet", 200.0, src_ethernet),
    PORT("RoCE 400GbE", MFU_LINK_ROCE, "RoCE on 400 Gb/s Ethernet", 400.0, src_ethernet),
    PORT("RoCE 800GbE", MFU_LINK_ROCE, "RoCE on 800 Gb/s Ethernet", 800.0, src_ethernet),
};

size_t mfu_link_count(void)
{
    return sizeof links / sizeof links[0];
}

mfu_status mfu_link_get(size_t index, const mfu_link **out)
{
    if (index >= mfu_link_count())
        return MFU_ERR_INVALID_ARGUMENT;
    *out = &links[index];
    return MFU_OK;
}
