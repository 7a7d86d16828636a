/* test_gpu_specs.c -- the peak table, name lookup and the env override. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "dtypes.h"
#include "gpu_lookup.h"
#include "gpu_name.h"
#include "gpu_table.h"
#include "peak_override.h"

#define GIB 1073741824ULL

static const mfu_gpu_spec *row(const char *name)
{
    size_t i;
    const mfu_gpu_spec *s;
    for (i = 0; i < mfu_gpu_spec_count(); i++) {
        if (mfu_gpu_spec_get(i, &s) == MFU_OK && strcmp(s->name, name) == 0)
            return s;
    }
    return NULL;
}

static double peak(const char *name, mfu_dtype dtype)
{
    const mfu_gpu_spec *s = row(name);
    double v = -1.0;
    if (s == NULL || mfu_gpu_spec_peak_tflops(s, dtype, &v) != MFU_OK)
        return -1.0;
    return v;
}

/* Look up and return the row name, "NOT_FOUND", "AMBIGUOUS" or "INVALID". */
static const char *find(const char *name, int major, int minor, int sms,
                        uint64_t mem, double *fraction)
{
    mfu_device_query q = {name, major, minor, sms, mem};
    mfu_gpu_match m;
    mfu_status st = mfu_gpu_lookup(&q, &m);
    if (fraction != NULL)
        *fraction = m.mig_fraction;
    if (st == MFU_OK)
        return m.spec->name;
    if (st == MFU_ERR_NOT_FOUND)
        return m.num_candidates >= 2 ? "AMBIGUOUS" : "NOT_FOUND";
    if (st == MFU_ERR_INVALID_ARGUMENT)
        return "INVALID";
    return "OTHER";
}

#define CHECK_FIND(expected, ...) CHECK(strcmp(find(__VA_ARGS__), (expected)) == 0)

static void test_table_integrity(void)
{
    size_t i, j, n = mfu_gpu_spec_count();
    const mfu_gpu_spec *a, *b;
    CHECK(n >= 40);
    for (i = 0; i < n; i++) {
        int d, any_field = 0;
        CHECK(mfu_gpu_spec_get(i, &a) == MFU_OK);
        /* every row cites a source with a URL */
        CHECK(a->source != NULL && strstr(a->source, "https://") != NULL);
        CHECK(a->name != NULL && a->name[0] != '\0');
        CHECK(a->model_token != NULL && a->model_token[0] != '\0');
        CHECK(a->variant_tokens != NULL && a->reject_tokens != NULL);
        CHECK(strcmp(a->vendor, "NVIDIA") == 0 || strcmp(a->vendor, "AMD") == 0);
        /* NVIDIA rows carry a compute capability, AMD rows a gfx target */
        if (strcmp(a->vendor, "NVIDIA") == 0)
            CHECK(a->cc_major >= 6 && a->gfx_arch == NULL); /* Pascal (P100) is 6.0 */
        else
            CHECK(a->cc_major == -1 && a->gfx_arch != NULL);
        CHECK(a->memory_bytes > 0);
        CHECK(a->num_sms >= 0 && a->memory_bandwidth_bytes_per_sec >= 0.0);
        for (d = 0; d < MFU_DTYPE_COUNT; d++) {
            double v = -2.0;
            mfu_status st = mfu_gpu_spec_peak_tflops(a, (mfu_dtype)d, &v);
            CHECK(st == MFU_OK || st == MFU_ERR_NOT_FOUND);
            if (st == MFU_OK) {
                CHECK(isfinite(v) && v > 0.0 && v < 1e5);
                any_field = 1;
            }
        }
        /* A10G is the one row without any sourced peak */
        CHECK(any_field || strcmp(a->name, "A10G") == 0);
        for (j = i + 1; j < n; j++) {
            CHECK(mfu_gpu_spec_get(j, &b) == MFU_OK);
            CHECK(strcmp(a->name, b->name) != 0); /* names unique */
            /* rows unique: same model + variants would be unreachable */
            CHECK(!(strcmp(a->model_token, b->model_token) == 0 &&
                    strcmp(a->variant_tokens, b->variant_tokens) == 0));
        }
    }
    CHECK(mfu_gpu_spec_get(n, &a) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_gpu_spec_get(0, NULL) == MFU_ERR_INVALID_ARGUMENT);
}

/* unpublished_dtypes: valid dtype names, none of them with a peak; the
 * known gaps of the table (README, Known limits) are there. */
static void test_unpublished(void)
{
    size_t i, n = mfu_gpu_spec_count();
    const mfu_gpu_spec *a;
    int d, listed = 0;
    for (i = 0; i < n; i++) {
        char words[64];
        char *word;
        CHECK(mfu_gpu_spec_get(i, &a) == MFU_OK);
        if (a->unpublished_dtypes == NULL)
            continue;
        CHECK(strlen(a->unpublished_dtypes) < sizeof words);
        strncpy(words, a->unpublished_dtypes, sizeof words - 1);
        words[sizeof words - 1] = '\0';
        for (word = strtok(words, " "); word != NULL; word = strtok(NULL, " ")) {
            mfu_dtype dtype;
            double v;
            CHECK(mfu_dtype_from_name(word, &dtype) == MFU_OK);
            CHECK(mfu_gpu_spec_peak_tflops(a, dtype, &v) == MFU_ERR_NOT_FOUND);
            CHECK(mfu_gpu_spec_peak_unpublished(a, dtype) == 1);
            listed++;
        }
        for (d = 0; d < MFU_DTYPE_COUNT; d++) {
            double v;
            if (mfu_gpu_spec_peak_tflops(a, (mfu_dtype)d, &v) == MFU_OK)
                CHECK(mfu_gpu_spec_peak_unpublished(a, (mfu_dtype)d) == 0);
        }
    }
    CHECK(listed >= 10);
    CHECK(mfu_gpu_spec_peak_unpublished(row("B300"), MFU_DTYPE_INT8) == 1);
    CHECK(mfu_gpu_spec_peak_unpublished(row("B300"), MFU_DTYPE_FP4) == 1);
    CHECK(mfu_gpu_spec_peak_unpublished(row("GB300"), MFU_DTYPE_FP32) == 1);
    CHECK(mfu_gpu_spec_peak_unpublished(row("T4"), MFU_DTYPE_FP64) == 1);
    CHECK(mfu_gpu_spec_peak_unpublished(row("V100 SXM2 32GB"), MFU_DTYPE_INT8) == 1);
    CHECK(mfu_gpu_spec_peak_unpublished(row("A10G"), MFU_DTYPE_BF16) == 1);
    /* absent because the hardware has none: fp8 on an A100, bf16 on a V100 */
    CHECK(mfu_gpu_spec_peak_unpublished(row("A100 SXM4 80GB"), MFU_DTYPE_FP8) == 0);
    CHECK(mfu_gpu_spec_peak_unpublished(row("V100 SXM2 32GB"), MFU_DTYPE_BF16) == 0);
    CHECK(mfu_gpu_spec_peak_unpublished(NULL, MFU_DTYPE_FP8) == 0);
    CHECK(mfu_gpu_spec_peak_unpublished(row("B300"), MFU_DTYPE_COUNT) == 0);
}

static void test_reference_values(void)
{
    /* H100 SXM datasheet: 1,979 bf16 with sparsity; whitepaper 1978.9 / 2 */
    CHECK_NEAR(peak("H100 SXM", MFU_DTYPE_BF16), 989.4, 1e-9);
    /* A100 datasheet: 312 bf16 dense (624 sparse) */
    CHECK_NEAR(peak("A100 SXM4 80GB", MFU_DTYPE_BF16), 312.0, 1e-9);
    /* HGX B200: 36 PF bf16 sparse over 8 GPUs: 36000 / 8 / 2 = 2250 */
    CHECK_NEAR(peak("B200", MFU_DTYPE_BF16), 2250.0, 1e-9);
    /* MI300X datasheet: 1307.4 bf16 dense */
    CHECK_NEAR(peak("MI300X", MFU_DTYPE_BF16), 1307.4, 1e-9);
    /* absent dtypes stay absent */
    CHECK(peak("A100 SXM4 80GB", MFU_DTYPE_FP8) < 0.0); /* Ampere: no FP8 */
    CHECK(peak("V100 SXM2 16GB", MFU_DTYPE_BF16) < 0.0); /* Volta: no BF16 */
    CHECK(peak("H100 SXM", MFU_DTYPE_FP4) < 0.0);       /* Hopper: no FP4 */
    CHECK(peak("MI250X (per GCD)", MFU_DTYPE_TF32) < 0.0);
    /* H100 PCIe datasheet: 1,513 bf16 sparse / 2 = 756.5 */
    CHECK_NEAR(peak("H100 PCIe", MFU_DTYPE_BF16), 756.5, 1e-9);
    /* MI250X OAM 383 bf16 over 2 GCDs = 191.5 */
    CHECK_NEAR(peak("MI250X (per GCD)", MFU_DTYPE_BF16), 191.5, 1e-9);
    /* RTX 4090: fp16 with FP32 accumulate 165.2 (the 330.3 FP16-acc is not used) */
    CHECK_NEAR(peak("GeForce RTX 4090", MFU_DTYPE_FP16), 165.2, 1e-9);
    CHECK(mfu_gpu_spec_peak_tflops(NULL, MFU_DTYPE_FP16, NULL) == MFU_ERR_INVALID_ARGUMENT);
}

static void test_new_rows(void)
{
    /* A30 datasheet: 165 bf16 dense (330 sparse); 56 SMs x 2048 FLOP/clk x
     * 1.44 GHz = 165.2e12 */
    CHECK_NEAR(peak("A30", MFU_DTYPE_BF16), 165.0, 1e-9);
    CHECK_NEAR(56.0 * 2048.0 * 1.44e9 / 1e12, 165.0, 0.5);
    CHECK_NEAR(peak("A30", MFU_DTYPE_FP64), 10.3, 1e-9); /* FP64 tensor */
    /* L20 partner figures: 59.8 fp32 : 119.5 bf16 : 239 fp8 (1 : 2 : 4);
     * 92 SMs x 128 x 2 x 2.52 GHz = 59.35e12 */
    CHECK_NEAR(peak("L20", MFU_DTYPE_BF16), 119.5, 1e-9);
    CHECK_NEAR(peak("L20", MFU_DTYPE_FP8), 239.0, 1e-9);
    CHECK_NEAR(92.0 * 128.0 * 2.0 * 2.52e9 / 1e12, 59.35, 0.01);
    /* RTX 6000 Ada: 1457.0 fp8 sparse / 2 = 728.5; / 2 = 364.25 bf16 */
    CHECK_NEAR(peak("RTX 6000 Ada Generation", MFU_DTYPE_FP8), 1457.0 / 2, 1e-9);
    CHECK_NEAR(peak("RTX 6000 Ada Generation", MFU_DTYPE_BF16), 364.2, 1e-9);
    CHECK_NEAR(142.0 * 2048.0 * 2.505e9 / 1e12, 728.5, 0.05);
    /* RTX PRO 6000 Blackwell: 4000 fp4 sparse / 2 = 2000; fp8 1000, bf16 500 */
    CHECK_NEAR(peak("RTX PRO 6000 Blackwell", MFU_DTYPE_FP4), 4000.0 / 2, 1e-9);
    CHECK_NEAR(peak("RTX PRO 6000 Blackwell", MFU_DTYPE_BF16), 500.0, 1e-9);
    CHECK_NEAR(peak("RTX PRO 6000 Blackwell", MFU_DTYPE_FP32), 125.0, 1e-9);
    /* V100S datasheet: 130 tensor, 16.4 fp32 = 80 x 64 x 2 x 1.601 GHz */
    CHECK_NEAR(peak("V100S PCIe 32GB", MFU_DTYPE_FP16), 130.0, 1e-9);
    CHECK_NEAR(80.0 * 64.0 * 2.0 * 1.601e9 / 1e12, 16.4, 0.01);
    /* P100: SXM2 10.6 fp32 = 56 x 64 x 2 x 1.48 GHz; PCIe 9.3 at 1.303 GHz */
    CHECK_NEAR(peak("P100 SXM2 16GB", MFU_DTYPE_FP32), 10.6, 1e-9);
    CHECK_NEAR(56.0 * 64.0 * 2.0 * 1.48e9 / 1e12, 10.6, 0.01);
    CHECK_NEAR(peak("P100 PCIe 16GB", MFU_DTYPE_FP16), 18.7, 1e-9);
    CHECK(peak("P100 PCIe 12GB", MFU_DTYPE_BF16) < 0.0); /* Pascal: no BF16 */
    CHECK_NEAR(row("P100 PCIe 12GB")->memory_bandwidth_bytes_per_sec, 549e9, 1.0);
    /* H800 PCIe: 1,513 bf16 sparse / 2 = 756.5; FP64 cut to 0.8 */
    CHECK_NEAR(peak("H800 PCIe", MFU_DTYPE_BF16), 756.5, 1e-9);
    CHECK_NEAR(peak("H800 PCIe", MFU_DTYPE_FP64), 0.8, 1e-9);
    /* MI210: 104 CUs x 1024 FLOP/clk x 1.7 GHz = 181.0e12 bf16 */
    CHECK_NEAR(peak("MI210", MFU_DTYPE_BF16), 181.0, 1e-9);
    CHECK_NEAR(104.0 * 1024.0 * 1.7e9 / 1e12, 181.0, 0.05);
    /* MI350X: 256 CUs x 8192 x 2.2 GHz = 4613.7e12 fp8; bf16 half */
    CHECK_NEAR(peak("MI350X", MFU_DTYPE_FP8), 4613.7, 1e-9);
    CHECK_NEAR(256.0 * 8192.0 * 2.2e9 / 1e12, 4613.7, 0.05);
    CHECK_NEAR(peak("MI350X", MFU_DTYPE_BF16), 2306.9, 1e-9);
    CHECK(peak("MI350X", MFU_DTYPE_TF32) < 0.0); /* CDNA 4: no TF32 */
}

static void test_later_datasheet_values(void)
{
    /* Blackwell datasheet, GB200 NVL72 per GPU: FP32 80, FP64 40
     * (NVL72 page: 5,760 / 72 = 80 and 2,880 / 72 = 40) */
    CHECK_NEAR(peak("GB200", MFU_DTYPE_FP32), 80.0, 1e-9);
    CHECK_NEAR(peak("GB200", MFU_DTYPE_FP64), 40.0, 1e-9);
    CHECK_NEAR(peak("GB200", MFU_DTYPE_BF16), 2500.0, 1e-9); /* 360 PF* / 72 / 2 */
    /* Blackwell datasheet, HGX B200 per GPU: 7.7 TB/s */
    CHECK_NEAR(row("B200")->memory_bandwidth_bytes_per_sec, 7.7e12, 1.0);
    /* HGX B300: no dense INT8 figure is published */
    CHECK(peak("B300", MFU_DTYPE_INT8) < 0.0);
    CHECK_NEAR(peak("B300", MFU_DTYPE_FP8), 4500.0, 1e-9); /* 72 PF* / 8 / 2 */
    /* MI355X: 256 CUs at 2.4 GHz; FP64 256 x 128 x 2.4e9 = 78.64e12,
     * FP32 256 x 256 x 2.4e9 = 157.29e12, INT8 = FP8 = 256 x 8192 x 2.4e9 */
    CHECK_NEAR(peak("MI355X", MFU_DTYPE_FP64), 78.6, 1e-9);
    CHECK_NEAR(peak("MI355X", MFU_DTYPE_FP32), 157.3, 1e-9);
    CHECK_NEAR(peak("MI355X", MFU_DTYPE_INT8), 5033.2, 1e-9);
    CHECK_NEAR(256.0 * 8192.0 * 2.4e9 / 1e12, 5033.2, 0.05);
}

static void test_normalize(void)
{
    char out[MFU_GPU_NAME_MAX + 1];
    char small[6];
    char huge[MFU_GPU_NAME_MAX + 2];
    CHECK(mfu_gpu_normalize_name("NVIDIA A100-SXM4-40GB MIG 3g.20gb", out, sizeof out) == MFU_OK);
    CHECK(strcmp(out, "a100 sxm4 40gb mig 3g 20gb") == 0);
    CHECK(mfu_gpu_normalize_name("NVIDIA GeForce RTX 4090", out, sizeof out) == MFU_OK);
    CHECK(strcmp(out, "rtx 4090") == 0);
    CHECK(mfu_gpu_normalize_name("AMD Instinct MI250X/MI250", out, sizeof out) == MFU_OK);
    CHECK(strcmp(out, "mi250x mi250") == 0);
    CHECK(mfu_gpu_normalize_name("Tesla V100-PCIE-32GB", out, sizeof out) == MFU_OK);
    CHECK(strcmp(out, "v100 pcie 32gb") == 0);
    CHECK(mfu_gpu_normalize_name("  \xe2\x84\xa2 AMD Radeon  PRO W7900 ", out, sizeof out) == MFU_OK);
    CHECK(strcmp(out, "pro w7900") == 0);
    /* bad input */
    CHECK(mfu_gpu_normalize_name(NULL, out, sizeof out) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_gpu_normalize_name("", out, sizeof out) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_gpu_normalize_name("NVIDIA", out, sizeof out) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_gpu_normalize_name("-- //", out, sizeof out) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_gpu_normalize_name("H100", NULL, 10) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_gpu_normalize_name("H100", out, 0) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_gpu_normalize_name("NVIDIA H100 PCIe", small, sizeof small) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_gpu_normalize_name("H100", small, sizeof small) == MFU_OK);
    memset(huge, 'a', sizeof huge - 1);
    huge[sizeof huge - 1] = '\0'; /* MFU_GPU_NAME_MAX + 1 characters */
    CHECK(mfu_gpu_normalize_name(huge, out, sizeof out) == MFU_ERR_INVALID_ARGUMENT);
    huge[MFU_GPU_NAME_MAX] = '\0'; /* exactly the maximum */
    CHECK(mfu_gpu_normalize_name(huge, out, sizeof out) == MFU_OK);
}

static void test_real_names(void)
{
    /* strings as torch.cuda.get_device_name() prints them */
    CHECK_FIND("H100 SXM", "NVIDIA H100 80GB HBM3", 9, 0, 132, 85520809984ULL, NULL);
    CHECK_FIND("H100 PCIe", "NVIDIA H100 PCIe", 9, 0, 114, 85520809984ULL, NULL);
    CHECK_FIND("H100 NVL", "NVIDIA H100 NVL", 9, 0, 132, 100485038080ULL, NULL);
    CHECK_FIND("A100 SXM4 80GB", "NVIDIA A100-SXM4-80GB", 8, 0, 108, 85089976320ULL, NULL);
    CHECK_FIND("A100 SXM4 40GB", "NVIDIA A100-SXM4-40GB", 8, 0, 108, 42505273344ULL, NULL);
    CHECK_FIND("A100 PCIe 40GB", "NVIDIA A100-PCIE-40GB", 8, 0, 108, 42505273344ULL, NULL);
    CHECK_FIND("A100 PCIe 80GB", "NVIDIA A100 80GB PCIe", 8, 0, 108, 85094301696ULL, NULL);
    CHECK_FIND("V100 SXM2 16GB", "Tesla V100-SXM2-16GB", 7, 0, 80, 16945512448ULL, NULL);
    CHECK_FIND("V100 PCIe 32GB", "Tesla V100-PCIE-32GB", 7, 0, 80, 34089730048ULL, NULL);
    CHECK_FIND("T4", "Tesla T4", 7, 5, 40, 15843721216ULL, NULL);
    CHECK_FIND("A10G", "NVIDIA A10G", 8, 6, 80, 23836098560ULL, NULL);
    CHECK_FIND("A10", "NVIDIA A10", 8, 6, 72, 23836098560ULL, NULL);
    CHECK_FIND("RTX A6000", "NVIDIA RTX A6000", 8, 6, 84, 51041271808ULL, NULL);
    CHECK_FIND("L40S", "NVIDIA L40S", 8, 9, 142, 47697362944ULL, NULL);
    CHECK_FIND("L40", "NVIDIA L40", 8, 9, 142, 47697362944ULL, NULL);
    CHECK_FIND("L4", "NVIDIA L4", 8, 9, 58, 23580639232ULL, NULL);
    CHECK_FIND("GeForce RTX 4090", "NVIDIA GeForce RTX 4090", 8, 9, 128, 25393692672ULL, NULL);
    CHECK_FIND("H200 SXM", "NVIDIA H200", 9, 0, 132, 150754820096ULL, NULL);
    CHECK_FIND("H200 NVL", "NVIDIA H200 NVL", 9, 0, 132, 150754820096ULL, NULL);
    CHECK_FIND("GH200 96GB", "NVIDIA GH200 480GB", 9, 0, 132, 102005473280ULL, NULL);
    CHECK_FIND("GH200 144GB", "NVIDIA GH200 144G HBM3e", 9, 0, 132, 153000000000ULL, NULL);
    CHECK_FIND("B200", "NVIDIA B200", 10, 0, 148, 191507447808ULL, NULL);
    CHECK_FIND("GB200", "NVIDIA GB200", 10, 0, 152, 199715979264ULL, NULL);
    CHECK_FIND("MI300X", "AMD Instinct MI300X", 9, 4, 304, 206141652992ULL, NULL);
    CHECK_FIND("MI250X (per GCD)", "AMD Instinct MI250X/MI250", 9, 0, 110, 68702699520ULL, NULL);
    CHECK_FIND("MI250 (per GCD)", "AMD Instinct MI250X/MI250", 9, 0, 104, 68702699520ULL, NULL);
    CHECK_FIND("MI300A", "AMD Instinct MI300A", 9, 4, 228, 4 * GIB, NULL);
    /* later rows: names, SMs, CC and memory as drivers report them */
    CHECK_FIND("A30", "NVIDIA A30", 8, 0, 56, 25232932864ULL, NULL);
    CHECK_FIND("L20", "NVIDIA L20", 8, 9, 92, 47781511168ULL, NULL);
    CHECK_FIND("RTX 6000 Ada Generation", "NVIDIA RTX 6000 Ada Generation", 8, 9, 142,
               51527024640ULL, NULL);
    CHECK_FIND("RTX PRO 6000 Blackwell", "NVIDIA RTX PRO 6000 Blackwell Workstation Edition",
               12, 0, 188, 102641958912ULL, NULL); /* 97886 MiB */
    CHECK_FIND("V100S PCIe 32GB", "Tesla V100S-PCIE-32GB", 7, 0, 80, 34089730048ULL, NULL);
    CHECK_FIND("P100 PCIe 16GB", "Tesla P100-PCIE-16GB", 6, 0, 56, 17071734784ULL, NULL);
    CHECK_FIND("P100 PCIe 12GB", "Tesla P100-PCIE-12GB", 6, 0, 56, 12788498432ULL, NULL);
    CHECK_FIND("P100 SXM2 16GB", "Tesla P100-SXM2-16GB", 6, 0, 56, 17071734784ULL, NULL);
    CHECK_FIND("H800 PCIe", "NVIDIA H800 PCIe", 9, 0, 114, 85520809984ULL, NULL);
    CHECK_FIND("MI210", "AMD Instinct MI210", 9, 0, 104, 68702699520ULL, NULL);
    CHECK_FIND("MI350X", "AMD Instinct MI350X", 9, 5, 256, 309237645312ULL, NULL);
}

static void test_tricky_pairs(void)
{
    /* token-based, not substring: each name finds its own row or nothing */
    CHECK_FIND("A10", "NVIDIA A10", -1, -1, -1, 0, NULL);
    CHECK_FIND("A100 SXM4 40GB", "NVIDIA A100-SXM4-40GB", -1, -1, -1, 0, NULL);
    CHECK_FIND("GB200", "NVIDIA GB200", -1, -1, -1, 0, NULL);
    CHECK_FIND("B200", "NVIDIA B200", -1, -1, -1, 0, NULL);
    CHECK_FIND("GH200 96GB", "NVIDIA GH200 480GB", -1, -1, -1, 0, NULL);
    CHECK_FIND("L40", "NVIDIA L40", -1, -1, -1, 0, NULL);
    CHECK_FIND("L40S", "NVIDIA L40S", -1, -1, -1, 0, NULL);
    CHECK_FIND("GeForce RTX 4080", "NVIDIA GeForce RTX 4080", -1, -1, -1, 0, NULL);
    CHECK_FIND("NOT_FOUND", "NVIDIA GeForce RTX 4080 SUPER", -1, -1, 80, 0, NULL);
    CHECK_FIND("NOT_FOUND", "NVIDIA GeForce RTX 4090 D", -1, -1, -1, 0, NULL);
    CHECK_FIND("NOT_FOUND", "NVIDIA GeForce RTX 4090 Laptop GPU", -1, -1, 76, 0, NULL);
    CHECK_FIND("MI300X", "AMD Instinct MI300X", -1, -1, -1, 0, NULL);
    CHECK_FIND("MI300A", "AMD Instinct MI300A", -1, -1, -1, 0, NULL);
    /* a hint that contradicts the name never selects another row */
    CHECK_FIND("NOT_FOUND", "NVIDIA H100 PCIe", 9, 0, 132, 0, NULL);
    CHECK_FIND("NOT_FOUND", "NVIDIA A100-SXM4-80GB", 9, 0, 108, 0, NULL);
    CHECK_FIND("NOT_FOUND", "NVIDIA A100-SXM4-80GB", 8, 0, 108, 42505273344ULL, NULL);
    /* bare names: SMs and memory decide */
    CHECK_FIND("H100 SXM", "NVIDIA H100", 9, 0, 132, 85520809984ULL, NULL);
    CHECK_FIND("H100 PCIe", "NVIDIA H100", 9, 0, 114, 0, NULL);
    /* a bare "NVIDIA H100" (no "NVL") is never the NVL row, even
     * with the NVL's memory: 100485038080 / 80e9 = 1.256 > 1.25 rules the
     * SXM out, so nothing fits */
    CHECK_FIND("NOT_FOUND", "NVIDIA H100", 9, 0, 132, 100485038080ULL, NULL);
    CHECK_FIND("NOT_FOUND", "NVIDIA H100 94GB HBM3", 9, 0, 132, 100485038080ULL, NULL);
    CHECK_FIND("H100 NVL", "NVIDIA H100 NVL", -1, -1, -1, 0, NULL);
    CHECK_FIND("H100 SXM", "NVIDIA H100", 9, 0, 132, 0, NULL); /* default rule */
    CHECK_FIND("AMBIGUOUS", "NVIDIA H100", -1, -1, -1, 0, NULL);
    CHECK_FIND("AMBIGUOUS", "NVIDIA A100", -1, -1, -1, 0, NULL);
    /* SXM4 and PCIe 40GB share SMs and memory: only the name tells */
    CHECK_FIND("AMBIGUOUS", "NVIDIA A100", 8, 0, 108, 42505273344ULL, NULL);
    CHECK_FIND("A100 SXM4 80GB", "NVIDIA A100", 8, 0, 108, 0, NULL); /* default rule */
    CHECK_FIND("AMBIGUOUS", "AMD Instinct MI250X/MI250", -1, -1, -1, 0, NULL);
    /* unknown devices */
    CHECK_FIND("NOT_FOUND", "NVIDIA GeForce RTX 2080 Ti", 7, 5, 68, 0, NULL);
    CHECK_FIND("NOT_FOUND", "Intel(R) Data Center GPU Max 1550", -1, -1, -1, 0, NULL);
    CHECK_FIND("NOT_FOUND", "H100100", -1, -1, -1, 0, NULL);
    /* the "6000" rows: each needs its generation's word, and the Max-Q and
     * Server Editions (other clocks and power) are other products */
    CHECK_FIND("NOT_FOUND", "Quadro RTX 6000", 7, 5, 72, 0, NULL);
    CHECK_FIND("NOT_FOUND", "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition",
               12, 0, 188, 0, NULL);
    CHECK_FIND("NOT_FOUND", "NVIDIA RTX PRO 6000 Blackwell Server Edition", 12, 0, 188, 0, NULL);
    CHECK_FIND("RTX A6000", "NVIDIA RTX A6000", -1, -1, -1, 0, NULL);
    /* "v100s" is not "v100"; a P100 without its form factor is ambiguous */
    CHECK_FIND("V100S PCIe 32GB", "Tesla V100S-PCIE-32GB", -1, -1, -1, 0, NULL);
    CHECK_FIND("AMBIGUOUS", "Tesla P100", 6, 0, 56, 17071734784ULL, NULL);
    /* H800: 132 SMs is the SXM part, 114 the PCIe one; no hint: ambiguous */
    CHECK_FIND("H800 SXM", "NVIDIA H800", 9, 0, 132, 85520809984ULL, NULL);
    CHECK_FIND("H800 PCIe", "NVIDIA H800", 9, 0, 114, 0, NULL);
    CHECK_FIND("AMBIGUOUS", "NVIDIA H800", -1, -1, -1, 0, NULL);
}

static int normalized_has_token(const char *name, const char *token)
{
    char out[MFU_GPU_NAME_MAX + 1];
    const char *p = out;
    size_t n = strlen(token);
    if (mfu_gpu_normalize_name(name, out, sizeof out) != MFU_OK)
        return 0;
    for (;;) {
        const char *end = strchr(p, ' ');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && strncmp(p, token, n) == 0)
            return 1;
        if (end == NULL)
            return 0;
        p = end + 1;
    }
}

static void test_display_names(void)
{
    size_t i;
    const mfu_gpu_spec *s;
    /* rule 0: with no hint, every row's display name is that row, and it
     * carries the row's model token (what fuzz_lookup checks of a match) */
    for (i = 0; i < mfu_gpu_spec_count(); i++) {
        CHECK(mfu_gpu_spec_get(i, &s) == MFU_OK);
        CHECK_FIND(s->name, s->name, -1, -1, -1, 0, NULL);
        CHECK(normalized_has_token(s->name, s->model_token));
    }
    /* ASCII case and surrounding blanks do not matter */
    CHECK_FIND("H100 PCIe", "  h100 PCIE\t", -1, -1, -1, 0, NULL);
    CHECK_FIND("A100 PCIe 80GB", "a100 pcie 80gb", -1, -1, -1, 0, NULL);
    CHECK_FIND("MI250X (per GCD)", "mi250x (PER gcd)", -1, -1, -1, 0, NULL);
    /* with a hint the token rules decide: a display name never overrides
     * what the driver reports */
    CHECK_FIND("NOT_FOUND", "H100 SXM", 9, 0, 114, 0, NULL);
    CHECK_FIND("NOT_FOUND", "A100 SXM4 80GB", -1, -1, -1, 42505273344ULL, NULL);
    CHECK_FIND("H100 PCIe", "H100 PCIe", 9, 0, 114, 0, NULL);
    /* rows of one chip share one peaks constant */
    CHECK(row("A100 SXM4 40GB")->dense_tflops == row("A800 PCIe 40GB")->dense_tflops);
    CHECK(row("H100 SXM")->dense_tflops == row("GH200 144GB")->dense_tflops);
    CHECK(row("A10G")->dense_tflops == NULL);
}

static void test_mig_and_partitions(void)
{
    double f = 0.0;
    /* A100 MIG 3g.20gb: the driver reports 42 of 108 SMs */
    CHECK_FIND("A100 SXM4 40GB", "NVIDIA A100-SXM4-40GB MIG 3g.20gb", 8, 0, 42, 21474836480ULL, &f);
    CHECK_NEAR(f, 42.0 / 108.0, 1e-12);
    /* H100 MIG 1g.10gb: 16 of 132 SMs; the slice memory is not checked */
    CHECK_FIND("H100 SXM", "NVIDIA H100 80GB HBM3 MIG 1g.10gb", 9, 0, 16, 10737418240ULL, &f);
    CHECK_NEAR(f, 16.0 / 132.0, 1e-12);
    /* a MIG slice without its SM count cannot be scaled */
    CHECK_FIND("NOT_FOUND", "NVIDIA H100 80GB HBM3 MIG 1g.10gb", 9, 0, -1, 0, NULL);
    /* more SMs than the device has is not a slice of it */
    CHECK_FIND("NOT_FOUND", "NVIDIA A100-SXM4-40GB MIG 7g.40gb", 8, 0, 200, 0, NULL);
    /* MI300X CPX partition: 38 of 304 CUs */
    CHECK_FIND("MI300X", "AMD Instinct MI300X", 9, 4, 38, 0, &f);
    CHECK_NEAR(f, 38.0 / 304.0, 1e-12);
    CHECK_FIND("NOT_FOUND", "AMD Instinct MI300X", 9, 4, 37, 0, NULL);
    /* whole devices report 1.0 */
    CHECK_FIND("L4", "NVIDIA L4", 8, 9, 58, 0, &f);
    CHECK_NEAR(f, 1.0, 0.0);
}

/* The tied rows of an ambiguous name, as "row|row|..." in table order. */
static void candidate_names(const mfu_gpu_match *m, char *out, size_t size)
{
    int i;
    out[0] = '\0';
    for (i = 0; i < MFU_GPU_CANDIDATES_MAX && m->candidates[i] != NULL; i++) {
        if (i > 0)
            strncat(out, "|", size - strlen(out) - 1);
        strncat(out, m->candidates[i]->name, size - strlen(out) - 1);
    }
}

static mfu_status ambiguous(const char *name, mfu_gpu_match *m, char *rows, size_t size)
{
    mfu_device_query q = {name, -1, -1, -1, 0};
    mfu_status st = mfu_gpu_lookup(&q, m);
    candidate_names(m, rows, size);
    return st;
}

static void test_ambiguous_names(void)
{
    mfu_gpu_match m;
    char rows[512];
    double tflops = -1.0, bandwidth = -1.0;

    /* "A100": four rows (A100 datasheet), every one bf16 312 -> the peak is
     * theirs; bandwidths 1,555 / 2,039 / 1,555 / 1,935 GB/s differ -> 0 */
    CHECK(ambiguous("A100", &m, rows, sizeof rows) == MFU_ERR_NOT_FOUND);
    CHECK(m.spec == NULL && m.num_candidates == 4);
    CHECK(strcmp(rows, "A100 SXM4 40GB|A100 SXM4 80GB|A100 PCIe 40GB|A100 PCIe 80GB") == 0);
    CHECK(m.candidate_fraction[0] == 1.0 && m.candidate_fraction[3] == 1.0);
    CHECK(m.candidates[4] == NULL);
    CHECK(mfu_gpu_candidates_peak(&m, MFU_DTYPE_BF16, &tflops, &bandwidth) == MFU_OK);
    CHECK(tflops == 312.0 && bandwidth == 0.0);
    CHECK(mfu_gpu_candidates_peak(&m, MFU_DTYPE_FP32, &tflops, &bandwidth) == MFU_OK);
    CHECK(tflops == 19.5);
    /* a dtype no A100 has */
    CHECK(mfu_gpu_candidates_peak(&m, MFU_DTYPE_FP8, &tflops, &bandwidth) == MFU_ERR_NOT_FOUND);
    CHECK(tflops == 0.0 && bandwidth == 0.0);

    /* "A100 40GB": SXM4 and PCIe 40GB, both 1,555 GB/s -> the bandwidth too */
    CHECK(ambiguous("A100 40GB", &m, rows, sizeof rows) == MFU_ERR_NOT_FOUND);
    CHECK(strcmp(rows, "A100 SXM4 40GB|A100 PCIe 40GB") == 0);
    CHECK(mfu_gpu_candidates_peak(&m, MFU_DTYPE_BF16, &tflops, &bandwidth) == MFU_OK);
    CHECK(tflops == 312.0 && bandwidth == 1555e9);

    /* "A100 80GB": 2,039 vs 1,935 GB/s */
    CHECK(ambiguous("NVIDIA A100 80GB", &m, rows, sizeof rows) == MFU_ERR_NOT_FOUND);
    CHECK(strcmp(rows, "A100 SXM4 80GB|A100 PCIe 80GB") == 0);
    CHECK(mfu_gpu_candidates_peak(&m, MFU_DTYPE_BF16, &tflops, &bandwidth) == MFU_OK);
    CHECK(tflops == 312.0 && bandwidth == 0.0);

    /* "H100": SXM 989.4 vs PCIe 756.5 bf16 (H100 datasheet) -> they differ;
     * the NVL needs its "nvl" token, so it is not a candidate */
    CHECK(ambiguous("H100", &m, rows, sizeof rows) == MFU_ERR_NOT_FOUND);
    CHECK(strcmp(rows, "H100 SXM|H100 PCIe") == 0);
    CHECK(mfu_gpu_candidates_peak(&m, MFU_DTYPE_BF16, &tflops, &bandwidth) == MFU_ERR_NOT_FOUND);
    CHECK(tflops == 0.0 && bandwidth == 0.0);
    CHECK(ambiguous("H100 80GB", &m, rows, sizeof rows) == MFU_ERR_NOT_FOUND);
    CHECK(strcmp(rows, "H100 SXM|H100 PCIe") == 0);

    /* not ambiguous: one row, or none -> NOT_FOUND, nothing listed */
    CHECK(ambiguous("H100 SXM", &m, rows, sizeof rows) == MFU_OK && rows[0] == '\0');
    CHECK(mfu_gpu_candidates_peak(&m, MFU_DTYPE_BF16, &tflops, &bandwidth) == MFU_ERR_NOT_FOUND);
    CHECK(ambiguous("Fake GPU 9000", &m, rows, sizeof rows) == MFU_ERR_NOT_FOUND);
    CHECK(m.num_candidates == 0 && rows[0] == '\0' && m.candidates[0] == NULL);
    CHECK(mfu_gpu_candidates_peak(&m, MFU_DTYPE_BF16, &tflops, &bandwidth) == MFU_ERR_NOT_FOUND);

    /* an SM count breaks the tie as before (rule 2c); the list is cleared */
    {
        mfu_device_query q = {"NVIDIA H100", 9, 0, 132, 0};
        CHECK(mfu_gpu_lookup(&q, &m) == MFU_OK && strcmp(m.spec->name, "H100 SXM") == 0);
        CHECK(m.num_candidates == 1 && m.candidates[0] == NULL);
    }
    /* bad arguments */
    CHECK(ambiguous("A100", &m, rows, sizeof rows) == MFU_ERR_NOT_FOUND);
    CHECK(mfu_gpu_candidates_peak(NULL, MFU_DTYPE_BF16, &tflops, &bandwidth) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_gpu_candidates_peak(&m, MFU_DTYPE_COUNT, &tflops, &bandwidth) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_gpu_candidates_peak(&m, MFU_DTYPE_BF16, NULL, &bandwidth) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_gpu_candidates_peak(&m, MFU_DTYPE_BF16, &tflops, NULL) == MFU_ERR_INVALID_ARGUMENT);
}

static void test_bad_queries(void)
{
    mfu_device_query q = {"NVIDIA H100", -1, -1, -1, 0};
    mfu_gpu_match m;
    CHECK(mfu_gpu_lookup(NULL, &m) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_gpu_lookup(&q, NULL) == MFU_ERR_INVALID_ARGUMENT);
    CHECK_FIND("INVALID", NULL, -1, -1, -1, 0, NULL);
    CHECK_FIND("INVALID", "", -1, -1, -1, 0, NULL);
    CHECK_FIND("INVALID", "NVIDIA H100", -1, -1, -5, 0, NULL);
    CHECK_FIND("INVALID", "NVIDIA H100", -1, -1, 0, 0, NULL);
    CHECK_FIND("INVALID", "NVIDIA H100", -7, -1, -1, 0, NULL);
    CHECK_FIND("INVALID", "NVIDIA H100", 9, 100, -1, 0, NULL);
    {
        char huge[4096];
        memset(huge, 'x', sizeof huge - 1);
        huge[sizeof huge - 1] = '\0';
        CHECK_FIND("INVALID", huge, -1, -1, -1, 0, NULL);
    }
}

static void test_dtypes(void)
{
    int d;
    mfu_dtype out;
    for (d = 0; d < MFU_DTYPE_COUNT; d++) {
        CHECK(mfu_dtype_from_name(mfu_dtype_name((mfu_dtype)d), &out) == MFU_OK);
        CHECK((int)out == d);
    }
    CHECK(mfu_dtype_from_name("BF16", &out) == MFU_OK && out == MFU_DTYPE_BF16);
    CHECK(mfu_dtype_from_name("bfloat16", &out) == MFU_ERR_NOT_FOUND);
    CHECK(mfu_dtype_from_name("fp", &out) == MFU_ERR_NOT_FOUND);
    CHECK(mfu_dtype_from_name("", &out) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_dtype_from_name(NULL, &out) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_dtype_name(MFU_DTYPE_COUNT) == NULL);
    CHECK(mfu_dtype_name((mfu_dtype)-1) == NULL);
    CHECK(strcmp(mfu_dtype_name(MFU_DTYPE_FP4), "fp4") == 0);
}

static void test_override(void)
{
    double v = 0.0;
    char huge[MFU_PEAK_OVERRIDE_MAX + 8];
    CHECK(mfu_peak_override_parse("989.4", MFU_DTYPE_BF16, &v) == MFU_OK);
    CHECK_NEAR(v, 989.4, 1e-12);
    CHECK(mfu_peak_override_parse(" 312 ", MFU_DTYPE_FP8, &v) == MFU_OK);
    CHECK_NEAR(v, 312.0, 1e-12);
    CHECK(mfu_peak_override_parse("1e3", MFU_DTYPE_FP32, &v) == MFU_OK);
    CHECK_NEAR(v, 1000.0, 1e-12);
    CHECK(mfu_peak_override_parse("bf16=989.4,fp8=1978.9", MFU_DTYPE_FP8, &v) == MFU_OK);
    CHECK_NEAR(v, 1978.9, 1e-12);
    CHECK(mfu_peak_override_parse("bf16 = 989.4 , FP8=1978.9", MFU_DTYPE_BF16, &v) == MFU_OK);
    CHECK_NEAR(v, 989.4, 1e-12);
    CHECK(mfu_peak_override_parse("bf16=989.4,fp8=1978.9", MFU_DTYPE_FP32, &v) == MFU_ERR_NOT_FOUND);
    /* malformed */
    CHECK(mfu_peak_override_parse("", MFU_DTYPE_BF16, &v) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_peak_override_parse("   ", MFU_DTYPE_BF16, &v) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_peak_override_parse("abc", MFU_DTYPE_BF16, &v) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_peak_override_parse("989.4x", MFU_DTYPE_BF16, &v) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_peak_override_parse("0", MFU_DTYPE_BF16, &v) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_peak_override_parse("-5", MFU_DTYPE_BF16, &v) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_peak_override_parse("nan", MFU_DTYPE_BF16, &v) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_peak_override_parse("inf", MFU_DTYPE_BF16, &v) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_peak_override_parse("1e999", MFU_DTYPE_BF16, &v) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_peak_override_parse("0x10", MFU_DTYPE_BF16, &v) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_peak_override_parse("1 2", MFU_DTYPE_BF16, &v) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_peak_override_parse("bf16=", MFU_DTYPE_BF16, &v) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_peak_override_parse("=5", MFU_DTYPE_BF16, &v) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_peak_override_parse("bf16=1,", MFU_DTYPE_BF16, &v) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_peak_override_parse("bf16=1,,fp8=2", MFU_DTYPE_BF16, &v) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_peak_override_parse("bf16=1;fp8=2", MFU_DTYPE_BF16, &v) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_peak_override_parse("bfloat16=1", MFU_DTYPE_BF16, &v) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_peak_override_parse("bf16=1,bf16=2", MFU_DTYPE_BF16, &v) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_peak_override_parse("bf16=1,5", MFU_DTYPE_BF16, &v) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_peak_override_parse("bf16=1=2", MFU_DTYPE_BF16, &v) == MFU_ERR_INVALID_ARGUMENT);
    /* a malformed entry is an error even when the asked dtype is well formed */
    CHECK(mfu_peak_override_parse("bf16=1,fp8=x", MFU_DTYPE_BF16, &v) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_peak_override_parse(NULL, MFU_DTYPE_BF16, &v) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_peak_override_parse("1", MFU_DTYPE_COUNT, &v) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_peak_override_parse("1", MFU_DTYPE_BF16, NULL) == MFU_ERR_INVALID_ARGUMENT);
    memset(huge, '1', sizeof huge - 1);
    huge[sizeof huge - 1] = '\0';
    CHECK(mfu_peak_override_parse(huge, MFU_DTYPE_BF16, &v) == MFU_ERR_INVALID_ARGUMENT);
}

int main(void)
{
    test_table_integrity();
    test_unpublished();
    test_reference_values();
    test_later_datasheet_values();
    test_new_rows();
    test_normalize();
    test_real_names();
    test_tricky_pairs();
    test_display_names();
    test_mig_and_partitions();
    test_ambiguous_names();
    test_bad_queries();
    test_dtypes();
    test_override();
    return check_summary("test_gpu_specs");
}
