/*
 * op_count_c.c -- CPU cost of counting one op call in the C core
 * (mfu_op_count, core/ops/ops.h) and of the analytic attention spans
 * (mfu_span_pairs, core/model/spans.h), for comparing two builds of csrc/core.
 *
 * The calls: an mm [4096, 4096] @ [4096, 11008] with grad; a conv2d
 * [8, 64, 56, 56] * [64, 64, 3, 3]; a causal SDPA (flash, [8, 32, 2048, 128]);
 * a flash-attn varlen call of 8 packed sequences under a causal window of
 * 4,096 keys; a chunked flash-attn call (FA3's attention_chunk 8,192 over
 * 16,384 tokens); and the analytic sliding-window span (4,096 keys) of a
 * batch of 8 sequences of 8,192 tokens and of one of 8 lengths 1,024 to
 * 8,192. Each is timed over CALLS calls (thread CPU time), REPS times; the
 * median per call is printed with the spread.
 *
 * Build one binary per core and run them in turn (from the repository
 * root; OLD is a copy of another revision's csrc/core, e.g.
 * `git archive main csrc/core | tar -x -C /tmp/old`):
 *   (the two cc commands of benchmarks/README.md, "One op call in the C
 *   core": each core's concept folders are include directories)
 *   for i in 1 2 3; do build/bench_ops_old; build/bench_ops_new; done
 *
 * Recorded: see benchmarks/README.md.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ops.h"
#include "spans.h"

enum { CALLS = 200000, REPS = 9 };

static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static mfu_op_arg tensor(const int64_t *shape, size_t ndim, const int64_t *values)
{
    mfu_op_arg a;
    memset(&a, 0, sizeof a);
    a.type = MFU_ARG_TENSOR;
    a.ints = shape;
    a.count = ndim;
    a.values = values;
    a.requires_grad = 1;
    return a;
}

static mfu_op_arg integer(int64_t v)
{
    mfu_op_arg a;
    memset(&a, 0, sizeof a);
    a.type = MFU_ARG_INT;
    a.value = v;
    return a;
}

/* Median ns per call of `op` on `args` (exits on a refused count). */
static double time_op(const char *op, const mfu_op_arg *args, size_t nargs, double *spread)
{
    const mfu_op_spec *spec = mfu_op_find(op);
    const mfu_op_call call = {.args = args, .nargs = nargs, .causal = MFU_CAUSAL_FULL,
                              .grad_enabled = 1};
    double ns[REPS];
    volatile uint64_t sink = 0;
    mfu_op_flops f;
    for (int r = 0; r < REPS; r++) {
        const double t0 = cpu_seconds();
        for (int i = 0; i < CALLS; i++) {
            if (mfu_op_count(spec, &call, &f, NULL) != MFU_OK) {
                fprintf(stderr, "%s: refused\n", op);
                exit(1);
            }
            sink += f.executed;
        }
        ns[r] = (cpu_seconds() - t0) / CALLS * 1e9;
    }
    qsort(ns, REPS, sizeof ns[0], cmp);
    *spread = ns[REPS - 1] - ns[0];
    return ns[REPS / 2];
}

static double time_spans(const int64_t *lengths, double *spread)
{
    const mfu_batch batch = {.lengths = lengths, .count = 8, .repeat = 1};
    double ns[REPS], pairs;
    volatile double sink = 0.0;
    for (int r = 0; r < REPS; r++) {
        const double t0 = cpu_seconds();
        for (int i = 0; i < CALLS; i++) {
            if (mfu_span_pairs(&batch, MFU_SPAN_SLIDING, 4096, MFU_CAUSAL_HALF, &pairs) != MFU_OK)
                exit(1);
            sink += pairs;
        }
        ns[r] = (cpu_seconds() - t0) / CALLS * 1e9;
    }
    qsort(ns, REPS, sizeof ns[0], cmp);
    *spread = ns[REPS - 1] - ns[0];
    return ns[REPS / 2];
}

int main(void)
{
    static const int64_t a[2] = {4096, 4096}, b[2] = {4096, 11008};
    static const int64_t x[4] = {8, 64, 56, 56}, w[4] = {64, 64, 3, 3};
    static const int64_t q[4] = {8, 32, 2048, 128};
    static const int64_t packed[3] = {65536, 32, 128}, cu_shape[1] = {9};
    static const int64_t cu[9] = {0, 8192, 16384, 24576, 32768, 40960, 49152, 57344, 65536};
    static const int64_t fa3_q[4] = {1, 16384, 32, 128};
    double spread, t;

    const mfu_op_arg mm[2] = {tensor(a, 2, NULL), tensor(b, 2, NULL)};
    const mfu_op_arg conv[2] = {tensor(x, 4, NULL), tensor(w, 4, NULL)};
    const mfu_op_arg sdpa[5] = {tensor(q, 4, NULL), tensor(q, 4, NULL), tensor(q, 4, NULL),
                                integer(0), integer(1)};
    /* flash_attn::_flash_attn_varlen_forward: q k v, cu_q, cu_k, max_q,
     * max_k, (7, 8 unread), causal at 9, window left 10, right 11 */
    mfu_op_arg varlen[12];
    memset(varlen, 0, sizeof varlen);
    for (int i = 0; i < 3; i++)
        varlen[i] = tensor(packed, 3, NULL);
    varlen[3] = tensor(cu_shape, 1, cu);
    varlen[4] = tensor(cu_shape, 1, cu);
    varlen[5] = integer(8192);
    varlen[6] = integer(8192);
    varlen[9] = integer(1);
    varlen[10] = integer(4095);
    varlen[11] = integer(0);

    t = time_op("aten::mm", mm, 2, &spread);
    printf("mm                       %7.1f ns/call (spread %.1f)\n", t, spread);
    t = time_op("aten::convolution", conv, 2, &spread);
    printf("conv2d                   %7.1f ns/call (spread %.1f)\n", t, spread);
    t = time_op("aten::_scaled_dot_product_flash_attention", sdpa, 5, &spread);
    printf("sdpa flash, causal       %7.1f ns/call (spread %.1f)\n", t, spread);
    t = time_op("flash_attn::_flash_attn_varlen_forward", varlen, 12, &spread);
    printf("varlen x8, window 4096   %7.1f ns/call (spread %.1f)\n", t, spread);
    /* FA3's flash_attn_3::fwd has attention_chunk; its row positions are
     * the table's: look the chunk role up rather than hard-code it */
    const mfu_op_spec *fa3 = mfu_op_find("flash_attn_3::fwd");
    if (fa3 != NULL && mfu_op_position(fa3, MFU_ROLE_ATTENTION_CHUNK) >= 0) {
        mfu_op_arg chunked[64];
        memset(chunked, 0, sizeof chunked);
        for (mfu_op_role r = MFU_ROLE_QUERY; r <= MFU_ROLE_VALUE; r++)
            chunked[mfu_op_position(fa3, r)] = tensor(fa3_q, 4, NULL);
        chunked[mfu_op_position(fa3, MFU_ROLE_IS_CAUSAL)] = integer(1);
        chunked[mfu_op_position(fa3, MFU_ROLE_ATTENTION_CHUNK)] = integer(8192);
        const size_t n = (size_t)mfu_op_position(fa3, MFU_ROLE_ATTENTION_CHUNK) + 1;
        t = time_op("flash_attn_3::fwd", chunked, n, &spread);
        printf("fa3 chunk 8192 of 16384  %7.1f ns/call (spread %.1f)\n", t, spread);
    }
    static const int64_t padded[8] = {8192, 8192, 8192, 8192, 8192, 8192, 8192, 8192};
    static const int64_t packed_lengths[8] = {1024, 2048, 3072, 4096, 5120, 6144, 7168, 8192};
    t = time_spans(padded, &spread);
    printf("span sliding 4096, 8x8k  %7.1f ns/call (spread %.1f)\n", t, spread);
    t = time_spans(packed_lengths, &spread);
    printf("span sliding 4096, 1k-8k %7.1f ns/call (spread %.1f)\n", t, spread);
    return 0;
}
