/*
 * gpu_name.h -- device-name normalisation: the token form every lookup rule
 * (gpu_lookup.h) reads.
 *
 * Rules:
 *   - ASCII only and locale-independent: letters are lower-cased; every
 *     byte that is not an ASCII letter or digit separates tokens (so UTF-8
 *     such as "(TM)" signs, dashes, dots and slashes are separators);
 *   - the vendor words "nvidia", "tesla", "geforce", "amd", "instinct" and
 *     "radeon" are dropped: they never tell two devices apart;
 *   - tokens are joined by single spaces.
 *     "NVIDIA A100-SXM4-40GB MIG 3g.20gb" -> "a100 sxm4 40gb mig 3g 20gb"
 *     "AMD Instinct MI250X/MI250"         -> "mi250x mi250"
 *
 * Input bounds: names longer than MFU_GPU_NAME_MAX bytes, empty names and
 * names with no token left (only separators and vendor words) are
 * MFU_ERR_INVALID_ARGUMENT; no more than MFU_GPU_NAME_MAX + 1 bytes of a
 * name are ever read.
 */
#ifndef MFU_GPU_NAME_H
#define MFU_GPU_NAME_H

#include <stddef.h>

#include "mfu_limits.h"
#include "mfu_status.h"

/* Write the normalized form of `raw` to `out` (out_size bytes), NUL-
 * terminated. A buffer of MFU_GPU_NAME_MAX + 1 bytes always suffices; a
 * smaller one that cannot hold the result -> MFU_ERR_INVALID_ARGUMENT. */
mfu_status mfu_gpu_normalize_name(const char *raw, char *out, size_t out_size);

#endif /* MFU_GPU_NAME_H */
