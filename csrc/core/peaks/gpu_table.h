/*
 * gpu_table.h -- the dense peak table: one row per device, each with the
 * datasheet it came from in `source` and in a comment beside it
 * (gpu_table.c is data only; gpu_lookup.h finds a device's row).
 *
 * Units are in the field names:
 *   *_tflops / mfu_dense_tflops      dense TFLOP/s (TOP/s for int8/int4),
 *                                    without 2:4 structured sparsity
 *   memory_bytes                     bytes (datasheet GB = 1e9 bytes)
 *   memory_bandwidth_bytes_per_sec   bytes per second
 *   boost_clock_hz                   hertz
 *
 * Conventions behind the peaks:
 *   - dense figures only: where a datasheet prints a peak only "with
 *     sparsity", the row holds half of it, and the comment says so;
 *   - consumer (GeForce) cards use the tensor figures with FP32 accumulate
 *     (what training uses), which they run at half the FP16-accumulate rate;
 *   - a peak of 0 means ABSENT: the hardware (or its datasheet) has no dense
 *     figure for that dtype. An absent dtype is never filled from another.
 *     A row's `unpublished_dtypes` tells the two apart: the dtypes the
 *     device computes but no source gives a dense figure for (B300 INT8:
 *     only a sparse board figure). Every other absent dtype is one the
 *     device has no dense peak for (fp8 on an A100);
 *   - memory_bandwidth_bytes_per_sec and num_sms of 0 mean not published.
 *
 * Rows share peaks: each chip or SKU has one mfu_dense_tflops constant in
 * gpu_table.c (A100 and A800 share GA100's), and every row of that part
 * points at it. Memory, bandwidth, SM count and the lookup tokens are the
 * row's own. A row whose datasheet gives no peak at all (A10G) has
 * dense_tflops NULL: it is known, so it never falls back to another row.
 */
#ifndef MFU_GPU_TABLE_H
#define MFU_GPU_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "dtypes.h"
#include "mfu_status.h"

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
    /* how gpu_lookup.h recognises the row in a driver's name */
    const char *model_token;    /* normalized token naming the model */
    const char *variant_tokens; /* space-separated tokens naming this variant */
    const char *reject_tokens;  /* tokens that mean another product, or "" */
    const char *required_token; /* a token the name must carry, or NULL */
    int bare_name_default;      /* tie-break winner, see gpu_lookup.h */
    /* what the driver reports about the device */
    int cc_major;               /* CUDA compute capability; -1 for AMD */
    int cc_minor;
    const char *gfx_arch;       /* AMD LLVM target ("gfx942"); NULL for NVIDIA */
    int num_sms;                /* SMs (NVIDIA) or CUs (AMD); 0 = not sourced */
    int memory_shared_with_cpu; /* APU: reported memory is not checked */
    /* the datasheet */
    double boost_clock_hz;      /* 0 = the datasheet gives none */
    uint64_t memory_bytes;
    double memory_bandwidth_bytes_per_sec; /* 0 = not sourced */
    const mfu_dense_tflops *dense_tflops;  /* NULL = no sourced peak at all */
    const char *unpublished_dtypes; /* space-separated dtype names the device
                                       computes with no published dense
                                       figure (absent above); NULL = none */
    const char *source;         /* datasheet title + URL */
} mfu_gpu_spec;

/* Number of rows in the table. */
size_t mfu_gpu_spec_count(void);

/* Row `index` (0 <= index < count) -> *out; else MFU_ERR_INVALID_ARGUMENT. */
mfu_status mfu_gpu_spec_get(size_t index, const mfu_gpu_spec **out);

/* The dense peak of `spec` for `dtype` in TFLOP/s; MFU_ERR_NOT_FOUND when the
 * row has none (absent), MFU_ERR_INVALID_ARGUMENT for a bad spec/dtype. */
mfu_status mfu_gpu_spec_peak_tflops(const mfu_gpu_spec *spec, mfu_dtype dtype,
                                    double *tflops_out);

/* 1 when `spec` computes `dtype` but no source publishes its dense peak
 * (it is absent from dense_tflops all the same); 0 otherwise, also for a
 * NULL spec or a bad dtype. */
int mfu_gpu_spec_peak_unpublished(const mfu_gpu_spec *spec, mfu_dtype dtype);

#endif /* MFU_GPU_TABLE_H */
