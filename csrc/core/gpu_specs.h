/*
 * gpu_specs.h -- the dense peak table, device lookup, dtype names and the
 * MFU_TRACKER_PEAK_TFLOPS override.
 *
 * The table (gpu_specs.c) is data only: one row per device, each with the
 * datasheet it came from in `source` and in a comment beside the row.
 *
 * Units are in the field names:
 *   *_tflops                         dense TFLOP/s (TOP/s for int8/int4),
 *                                    without 2:4 structured sparsity
 *   memory_bytes                     bytes (datasheet GB = 1e9 bytes)
 *   memory_bandwidth_bytes_per_sec   bytes per second
 *   boost_clock_hz                   hertz
 *
 * A peak of 0 means ABSENT: the hardware (or its datasheet) has no dense
 * figure for that dtype. An absent dtype is never filled from another one.
 *
 * Lookup, in two separate steps:
 *   1. mfu_gpu_normalize_name(): lower-case ASCII, every character that is
 *      not a letter or digit separates tokens, vendor words ("nvidia",
 *      "tesla", "geforce", "amd", "instinct", "radeon") are dropped.
 *      "NVIDIA A100-SXM4-40GB MIG 3g.20gb" -> "a100 sxm4 40gb mig 3g 20gb".
 *   2. mfu_gpu_lookup(): token-based, never substring-based ("a10" is not
 *      "a100", "b200" is not "gb200", "h100" is not "gh200", "l40" is not
 *      "l40s"). A row is a candidate when its model token is one of the
 *      name's tokens, none of its reject tokens is ("4080 super", "4090 d",
 *      "laptop" are other products), and every hint agrees:
 *        - variant tokens: when the name carries a form-factor token (sxm*,
 *          pcie, nvl), a memory-size token ("40gb", "144g") or a memory-type
 *          token (hbm2, hbm2e, hbm3, hbm3e) and the row lists tokens of that
 *          class, the name's token must be among the row's;
 *        - compute capability (NVIDIA rows only) must be equal when given;
 *        - SM/CU count must be equal when given (whole devices);
 *        - total memory must be within [0.75, 1.25] x the datasheet size
 *          when given (drivers report GiB-ish sizes a few % off the label).
 *      Ties are broken by (a) more variant tokens named, then (b) the memory
 *      size closest to the reported one (log ratio, 5% margin), then (c) the
 *      row marked bare_name_default (the SXM part) but only when an SM count
 *      was given and matched. A tie left after that is ambiguous:
 *      MFU_ERR_NOT_FOUND with num_candidates >= 2 (e.g. "NVIDIA H100" with
 *      no SM count or memory). No hint ever selects a row of another model.
 *
 * Partitions:
 *   - MIG: a name with the token "mig" is a slice of the device named before
 *     it. Its SM count (the slice's, as the driver reports it) is required
 *     and must be <= the full device's; peaks scale by slice_sms / full_sms,
 *     reported as mig_fraction. Memory is not checked (it is the slice's).
 *   - AMD compute partitions (CPX/DPX/QPX): a CU count that evenly divides
 *     the device's CU count is a partition, scaled the same way.
 *
 * Input bounds: names longer than MFU_GPU_NAME_MAX bytes, empty names and
 * names with no letter or digit are MFU_ERR_INVALID_ARGUMENT; the functions
 * never read past MFU_GPU_NAME_MAX + 1 bytes of a name.
 */
#ifndef MFU_GPU_SPECS_H
#define MFU_GPU_SPECS_H

#include <stddef.h>
#include <stdint.h>

#include "mfu_status.h"

/* Longest device name accepted, in bytes (without the terminating NUL). */
#define MFU_GPU_NAME_MAX 256
/* Longest MFU_TRACKER_PEAK_TFLOPS text accepted, in bytes. */
#define MFU_PEAK_OVERRIDE_MAX 1024

/* ---- dtypes ------------------------------------------------------------ */

typedef enum mfu_dtype {
    MFU_DTYPE_FP64 = 0,
    MFU_DTYPE_FP32 = 1,
    MFU_DTYPE_TF32 = 2,
    MFU_DTYPE_FP16 = 3,
    MFU_DTYPE_BF16 = 4,
    MFU_DTYPE_FP8 = 5,
    MFU_DTYPE_INT8 = 6,
    MFU_DTYPE_INT4 = 7,
    MFU_DTYPE_FP4 = 8,
    MFU_DTYPE_COUNT = 9
} mfu_dtype;

/* Canonical name ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8",
 * "int4", "fp4") or NULL for a value outside the enum. */
const char *mfu_dtype_name(mfu_dtype dtype);

/* The dtype whose canonical name equals `name` (ASCII case-insensitive).
 * Aliases ("bfloat16", torch dtypes) are the Python layer's business.
 * NULL or over-long name -> MFU_ERR_INVALID_ARGUMENT; unknown -> NOT_FOUND. */
mfu_status mfu_dtype_from_name(const char *name, mfu_dtype *out);

/* ---- the table --------------------------------------------------------- */

/* Dense peaks in TFLOP/s (TOP/s for the integer types); 0 = absent. */
typedef struct mfu_dense_tflops {
    double fp64; /* the datasheet's headline dense FP64: tensor/matrix FP64
                    where the part has it (Ampere/Hopper/CDNA), else vector */
    double fp32; /* the dense FP32 GEMM peak: plain (non-tensor) FP32 on
                    NVIDIA (TF32 is its own entry), FP32 matrix on AMD CDNA */
    double tf32; /* TF32 tensor / matrix */
    double fp16; /* FP16 tensor with FP32 accumulate */
    double bf16; /* BF16 tensor with FP32 accumulate */
    double fp8;  /* FP8 tensor with FP32 accumulate */
    double int8;
    double int4;
    double fp4;
} mfu_dense_tflops;

typedef struct mfu_gpu_spec {
    const char *name;           /* display name, unique in the table */
    const char *vendor;         /* "NVIDIA" or "AMD" */
    const char *architecture;   /* "Hopper", "CDNA 3", ... */
    const char *model_token;    /* normalized token naming the model */
    const char *variant_tokens; /* space-separated tokens naming this variant */
    const char *reject_tokens;  /* tokens that mean another product, or "" */
    const char *required_token; /* a token the name must carry, or NULL */
    int bare_name_default;      /* tie-break winner, see the lookup rules */
    int cc_major;               /* CUDA compute capability; -1 for AMD */
    int cc_minor;
    const char *gfx_arch;       /* AMD LLVM target ("gfx942"); NULL for NVIDIA */
    int num_sms;                /* SMs (NVIDIA) or CUs (AMD); 0 = not sourced */
    int memory_shared_with_cpu; /* APU: reported memory is not checked */
    double boost_clock_hz;      /* 0 = the datasheet gives none */
    uint64_t memory_bytes;
    double memory_bandwidth_bytes_per_sec;
    mfu_dense_tflops dense_tflops;
    const char *source; /* datasheet title + URL */
} mfu_gpu_spec;

/* Number of rows in the table. */
size_t mfu_gpu_spec_count(void);

/* Row `index` (0 <= index < count) -> *out; else MFU_ERR_INVALID_ARGUMENT. */
mfu_status mfu_gpu_spec_get(size_t index, const mfu_gpu_spec **out);

/* The dense peak of `spec` for `dtype` in TFLOP/s; MFU_ERR_NOT_FOUND when the
 * row has none (absent), MFU_ERR_INVALID_ARGUMENT for a bad spec/dtype. */
mfu_status mfu_gpu_spec_peak_tflops(const mfu_gpu_spec *spec, mfu_dtype dtype,
                                    double *tflops_out);

/* ---- name normalisation and lookup ------------------------------------- */

/* Write the normalized form of `raw` (see the top of this file) to `out`,
 * NUL-terminated. A buffer of MFU_GPU_NAME_MAX + 1 bytes always suffices;
 * a smaller one that cannot hold the result -> MFU_ERR_INVALID_ARGUMENT. */
mfu_status mfu_gpu_normalize_name(const char *raw, char *out, size_t out_size);

/* What the driver tells about a device. -1 / 0 mean "unknown". */
typedef struct mfu_device_query {
    const char *name;            /* as torch.cuda.get_device_name() prints it */
    int cc_major;                /* -1 or 0..99 */
    int cc_minor;                /* -1 or 0..99 */
    int num_sms;                 /* -1 or >= 1 (multi_processor_count) */
    uint64_t total_memory_bytes; /* 0 = unknown */
} mfu_device_query;

typedef struct mfu_gpu_match {
    const mfu_gpu_spec *spec; /* the row; NULL when not found */
    double mig_fraction;      /* 1.0, or slice SMs / full SMs for a partition */
    int is_partition;         /* 1 for a MIG slice or AMD compute partition */
    int num_candidates;       /* rows that fit the name and hints; >= 2 with
                                 MFU_ERR_NOT_FOUND means ambiguous */
} mfu_gpu_match;

/* Find the row for `query` (rules at the top of this file).
 * MFU_OK: out->spec set. MFU_ERR_NOT_FOUND: unknown or ambiguous device.
 * MFU_ERR_INVALID_ARGUMENT: NULL pointers, bad name, out-of-range hints. */
mfu_status mfu_gpu_lookup(const mfu_device_query *query, mfu_gpu_match *out);

/* ---- MFU_TRACKER_PEAK_TFLOPS ------------------------------------------- */

/* Parse the override text for `dtype`. The text is either one number, the
 * peak for every dtype ("989.4"), or a comma-separated list of
 * dtype=number ("bf16=989.4, fp8=1978.9"). Numbers are TFLOP/s, finite and
 * > 0; dtype names are the canonical ones, each at most once; blanks around
 * items are allowed; anything else is MFU_ERR_INVALID_ARGUMENT.
 * MFU_ERR_NOT_FOUND: a well-formed list that does not name `dtype`. */
mfu_status mfu_peak_override_parse(const char *text, mfu_dtype dtype,
                                   double *tflops_out);

#endif /* MFU_GPU_SPECS_H */
