/*
 * gpu_lookup.h -- which row of the peak table (gpu_table.h) a device is,
 * from what the driver reports: its name and, when known, its compute
 * capability, SM/CU count and memory size.
 *
 * The rules, in order:
 *   0. Display names. With no hint given, a name equal to a row's display
 *      name ("H100 SXM", "a100 pcie 80gb"; ASCII case and surrounding
 *      blanks ignored) is that row. This is how a user names a row by hand.
 *   1. Tokens, never substrings. The name is normalized (gpu_name.h). A row
 *      is a candidate when its model token is one of the name's tokens,
 *      none of its reject tokens is ("4080 super", "4090 d", "laptop" are
 *      other products), its required token (if any) is, and every hint
 *      agrees:
 *        - variant tokens: when the name carries a form-factor token (sxm*,
 *          pcie, nvl), a memory-size token ("40gb", "144g") or a memory-type
 *          token (hbm2, hbm2e, hbm3, hbm3e) and the row lists tokens of that
 *          class, the name's token must be among the row's;
 *        - compute capability (NVIDIA rows only) must be equal when given;
 *        - SM/CU count must be equal when given (whole devices);
 *        - total memory must be within [0.75, 1.25] x the datasheet size
 *          when given (drivers report GiB-ish sizes a few % off the label).
 *      So "a10" is not "a100", "b200" is not "gb200", "h100" is not
 *      "gh200", "l40" is not "l40s".
 *   2. Ties between candidates are broken by (a) more variant tokens named,
 *      then (b) the memory size closest to the reported one (log ratio, 5%
 *      margin), then (c) the row marked bare_name_default (the SXM part) but
 *      only when an SM count was given and matched. A tie left after that
 *      is ambiguous: MFU_ERR_NOT_FOUND with num_candidates >= 2 (e.g.
 *      "NVIDIA H100" with no SM count or memory), and the tied rows listed
 *      in candidates[]. No hint ever selects a row of another model.
 *   3. Ambiguous but agreeing: mfu_gpu_candidates_peak() tells whether every
 *      tied row has the same dense peak for one dtype ("A100": four rows,
 *      bf16 312 in each), and their memory bandwidth when that agrees too
 *      (it does not for "A100": 1.555, 2.039, 1.555, 1.935 TB/s). A caller
 *      may then use that peak and say which rows matched; when the rows
 *      differ it lists them ("H100": SXM 989.4, PCIe 756.5 bf16) and asks
 *      for one by its display name (rule 0).
 *
 * Partitions:
 *   - MIG: a name with the token "mig" is a slice of the device named before
 *     it. Its SM count (the slice's, as the driver reports it) is required
 *     and must be <= the full device's; peaks scale by slice_sms / full_sms,
 *     reported as mig_fraction. Memory is not checked (it is the slice's).
 *   - AMD compute partitions (CPX/DPX/QPX): a CU count that evenly divides
 *     the device's CU count is a partition, scaled the same way.
 *
 * The lookup is pure: no state, the same query always gives the same answer.
 */
#ifndef MFU_GPU_LOOKUP_H
#define MFU_GPU_LOOKUP_H

#include <stdint.h>

#include "dtypes.h"
#include "gpu_table.h"
#include "mfu_limits.h"
#include "mfu_status.h"

/* What the driver tells about a device. -1 / 0 mean "unknown". */
typedef struct mfu_device_query {
    const char *name;            /* as torch.cuda.get_device_name() prints it */
    int cc_major;                /* -1 or 0..MFU_GPU_CC_MAX */
    int cc_minor;                /* -1 or 0..MFU_GPU_CC_MAX */
    int num_sms;                 /* -1 or >= 1 (multi_processor_count) */
    uint64_t total_memory_bytes; /* 0 = unknown */
} mfu_device_query;

typedef struct mfu_gpu_match {
    const mfu_gpu_spec *spec; /* the row; NULL when not found */
    double mig_fraction;      /* 1.0, or slice SMs / full SMs for a partition */
    int is_partition;         /* 1 for a MIG slice or AMD compute partition */
    int num_candidates;       /* rows that fit the name and hints; >= 2 with
                                 MFU_ERR_NOT_FOUND means ambiguous */
    /* Ambiguous: the tied rows in table order (the first
     * MFU_GPU_CANDIDATES_MAX of num_candidates) and each one's partition
     * fraction (1.0 for a whole device). Unused entries are NULL / 0. */
    const mfu_gpu_spec *candidates[MFU_GPU_CANDIDATES_MAX];
    double candidate_fraction[MFU_GPU_CANDIDATES_MAX];
} mfu_gpu_match;

/* Find the row for `query` (rules above).
 * MFU_OK: out->spec set. MFU_ERR_NOT_FOUND: unknown or ambiguous device.
 * MFU_ERR_INVALID_ARGUMENT: NULL pointers, an unusable name (gpu_name.h),
 * out-of-range hints. */
mfu_status mfu_gpu_lookup(const mfu_device_query *query, mfu_gpu_match *out);

/* Rule 3: do the rows of an ambiguous match agree on `dtype`?
 * MFU_OK: every candidate has a dense `dtype` peak and, scaled by its
 *   partition fraction, they are equal: *tflops_out (TFLOP/s).
 *   *bandwidth_out is their memory bandwidth (bytes/s, scaled the same way)
 *   when every row has one and they are equal, else 0 (MBU unavailable).
 * MFU_ERR_NOT_FOUND: the rows differ for `dtype`, one lacks it, or the match
 *   is not an ambiguous one (a single row, none, or more rows than listed).
 * MFU_ERR_INVALID_ARGUMENT: NULL pointers or a bad dtype. */
mfu_status mfu_gpu_candidates_peak(const mfu_gpu_match *match, mfu_dtype dtype,
                                   double *tflops_out, double *bandwidth_out);

#endif /* MFU_GPU_LOOKUP_H */
