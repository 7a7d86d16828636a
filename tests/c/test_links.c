/*
 * test_links.c -- the link table (links.h, link_table.c): every row named
 * once and sourced, per-direction figures from the datasheets' totals by
 * hand, the intra-node lookup by a peak-table device name, the network
 * lookup by the rate sysfs reports, the rate parser and a rank's share of
 * a node's ports.
 */
#include <math.h>
#include <string.h>

#include "check.h"
#include "gpu_table.h"
#include "links.h"

static void test_rows(void)
{
    size_t n = mfu_link_count();
    const mfu_link *row, *other;
    CHECK(n >= 50);
    for (size_t i = 0; i < n; i++) {
        CHECK(mfu_link_get(i, &row) == MFU_OK);
        CHECK(row->name != NULL && row->link != NULL && row->source != NULL);
        CHECK(strstr(row->source, "https://") != NULL); /* every row cites its source */
        CHECK(isfinite(row->bytes_per_sec) && row->bytes_per_sec > 0.0);
        CHECK(mfu_link_kind_name(row->kind) != NULL);
        for (size_t j = i + 1; j < n; j++) { /* names are unique within a scope */
            CHECK(mfu_link_get(j, &other) == MFU_OK);
            CHECK(other->scope != row->scope || strcmp(other->name, row->name) != 0);
        }
        if (row->scope == MFU_LINK_INTRA) {
            /* every device row names a device of the peak table */
            int found = 0;
            const mfu_gpu_spec *spec;
            for (size_t k = 0; mfu_gpu_spec_get(k, &spec) == MFU_OK; k++)
                found |= strcmp(spec->name, row->name) == 0;
            CHECK(found);
            CHECK(row->rate_gbps == 0.0 && row->generation >= 1);
            CHECK(row->kind == MFU_LINK_NVLINK || row->kind == MFU_LINK_XGMI
                  || row->kind == MFU_LINK_PCIE);
        } else {
            CHECK(row->kind == MFU_LINK_INFINIBAND || row->kind == MFU_LINK_ROCE);
            CHECK(row->bytes_per_sec == row->rate_gbps / 8.0 * 1e9);
        }
    }
    CHECK(mfu_link_get(n, &row) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_link_kind_name(MFU_LINK_KIND_COUNT) == NULL);
}

static void test_intra(void)
{
    const mfu_link *row = NULL;
    /* H100 SXM: "NVLink: 900GB/s" total -> 450 GB/s each way, NVLink 4 */
    CHECK(mfu_link_intra("H100 SXM", &row) == MFU_OK);
    CHECK(row->kind == MFU_LINK_NVLINK && row->generation == 4 && row->bytes_per_sec == 450e9);
    /* A100 SXM4: 600 -> 300, NVLink 3; B200: 1.8 TB/s -> 900, NVLink 5 */
    CHECK(mfu_link_intra("A100 SXM4 80GB", &row) == MFU_OK && row->bytes_per_sec == 300e9);
    CHECK(row->generation == 3);
    CHECK(mfu_link_intra("B200", &row) == MFU_OK && row->bytes_per_sec == 900e9);
    CHECK(row->generation == 5);
    /* H800: NVLink cut to 400 -> 200 */
    CHECK(mfu_link_intra("H800 SXM", &row) == MFU_OK && row->bytes_per_sec == 200e9);
    /* MI300X: 7 Infinity Fabric links x 128 GB/s / 2 = 448 GB/s */
    CHECK(mfu_link_intra("MI300X", &row) == MFU_OK && row->kind == MFU_LINK_XGMI);
    CHECK(row->bytes_per_sec == 448e9);
    /* PCIe cards: 4.0 x16 = 16 GT/s x 16 x 128/130 / 8 = 31.508 GB/s each way */
    CHECK(mfu_link_intra("L40S", &row) == MFU_OK && row->kind == MFU_LINK_PCIE);
    CHECK(row->generation == 4);
    CHECK_NEAR(row->bytes_per_sec, 31.5076923e9, 1e-8);
    /* 5.0 x16 = 63.015 GB/s; 3.0 x16 = 15.754 GB/s */
    CHECK(mfu_link_intra("H100 PCIe", &row) == MFU_OK && row->generation == 5);
    CHECK_NEAR(row->bytes_per_sec, 63.0153846e9, 1e-8);
    CHECK(mfu_link_intra("T4", &row) == MFU_OK && row->generation == 3);
    CHECK_NEAR(row->bytes_per_sec, 15.7538462e9, 1e-8);
    /* unsourced devices and the network rows are not intra-node links */
    CHECK(mfu_link_intra("A10G", &row) == MFU_ERR_NOT_FOUND);
    CHECK(mfu_link_intra("InfiniBand NDR", &row) == MFU_ERR_NOT_FOUND);
    CHECK(mfu_link_intra("h100 sxm", &row) == MFU_ERR_NOT_FOUND); /* exact names */
    CHECK(mfu_link_intra(NULL, &row) == MFU_ERR_INVALID_ARGUMENT);
}

static void test_inter(void)
{
    const mfu_link *row = NULL;
    /* NDR: 400 Gb/s = 50 GB/s each way */
    CHECK(mfu_link_inter("InfiniBand", 400.0, &row) == MFU_OK);
    CHECK(row->kind == MFU_LINK_INFINIBAND && row->bytes_per_sec == 50e9);
    CHECK(mfu_link_inter(" infiniband\n", 200.0, &row) == MFU_OK && row->bytes_per_sec == 25e9);
    CHECK(mfu_link_inter("Ethernet", 400.0, &row) == MFU_OK && row->kind == MFU_LINK_ROCE);
    CHECK(mfu_link_inter("Ethernet", 100.0, &row) == MFU_OK && row->bytes_per_sec == 12.5e9);
    CHECK(mfu_link_inter("InfiniBand", 56.0, &row) == MFU_ERR_NOT_FOUND); /* FDR: no row */
    CHECK(mfu_link_inter("Omni-Path", 100.0, &row) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_link_inter("InfiniBand", 0.0, &row) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_link_inter("InfiniBand", NAN, &row) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_link_inter(NULL, 400.0, &row) == MFU_ERR_INVALID_ARGUMENT);
}

static void test_parse_rate(void)
{
    static const char ndr[] = "400 Gb/sec (4X NDR)\n";
    double r = 0.0;
    CHECK(mfu_link_parse_rate(ndr, sizeof ndr - 1, &r) == MFU_OK && r == 400.0);
    CHECK(mfu_link_parse_rate("  56 Gb/sec (4X FDR)", 20, &r) == MFU_OK && r == 56.0);
    CHECK(mfu_link_parse_rate("2.5 Gb/sec (1X SDR)", 19, &r) == MFU_OK && r == 2.5);
    /* reads no further than `size`: the unit cut off is an error */
    CHECK(mfu_link_parse_rate(ndr, 7, &r) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_link_parse_rate("Gb/sec", 6, &r) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_link_parse_rate("0 Gb/sec", 8, &r) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_link_parse_rate("1.2.3 Gb/sec", 12, &r) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_link_parse_rate("400 MB/sec", 10, &r) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_link_parse_rate("", 0, &r) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_link_parse_rate(NULL, 4, &r) == MFU_ERR_INVALID_ARGUMENT);
}

static void test_share(void)
{
    /* 8 NDR ports shared by 8 ranks: 50 GB/s each; 1 port by 8 ranks: 6.25 */
    CHECK(mfu_link_share(50e9, 8, 8) == 50e9);
    CHECK(mfu_link_share(50e9, 1, 8) == 6.25e9);
    CHECK(isnan(mfu_link_share(50e9, 0, 8)) && isnan(mfu_link_share(50e9, 8, 0)));
    CHECK(isnan(mfu_link_share(NAN, 1, 1)) && isnan(mfu_link_share(-1.0, 1, 1)));
}

int main(void)
{
    test_rows();
    test_intra();
    test_inter();
    test_parse_rate();
    test_share();
    return check_summary("test_links");
}
