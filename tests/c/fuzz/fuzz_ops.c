/*
 * fuzz_ops.c -- mfu_op_count (ops.h) on arbitrary calls of every table row:
 * any argument types at any positions, extreme and negative sizes, offsets
 * that decrease or overflow, unreadable offsets, bad conventions.
 *
 * Input: row u8 (>= the table size: a NULL row), flags u8, nargs u8
 * (% MFU_OP_ARGS_MAX + 1), then per position: type u8 (% 4: none, tensor,
 * int, int list) and
 *   tensor:   ndim u8 (% 10), bits u8 (1: requires grad, 2: values
 *             readable, 4: values in [-7, 7], block indices), ndim x fi_i64 sizes, and when readable with
 *             sizes >= 0 whose product is <= 64: that many fi_i64 values
 *             (row-major; a 1-D tensor: size[0])
 *   int:      fi_i64
 *   int list: n u8 (% 10), n x fi_i64
 * flags: bits 0-1 the convention (0 full, 1 half, 2-3 out of range),
 * bit 2 backward phase, bit 3 grad mode off, bits 4-5 the TF32 bits,
 * bits 6-7 every argument's dtype code x 4 (none, fp16, fp4, out of range).
 * Every array (the args, each size and value list) is a heap block of
 * exactly its length: a read past any of them is an ASan report.
 *
 * Properties:
 *  - the status is OK, INVALID_ARGUMENT or OVERFLOW; on error the output is
 *    untouched and the error names a reason and a role (or the call);
 *  - on OK: executed >= 0; model_backward is 0, 1x or 2x executed, and 0 in
 *    the backward phase, with grad mode off and for backward kernels;
 *    model_self is 0 at the recompute sites; over-compute and square_model
 *    only for a full-square row; the mask notes only for attention forward
 *    calls; only attention is ever approximate;
 *  - only the positions mfu_op_inputs lists are read: garbage anywhere
 *    else changes nothing;
 *  - the half convention gives at most the full count (only attention
 *    counts less: exactly half of a causal call, the kept pairs of a
 *    window), and succeeds whenever full does;
 *  - mm and bmm: the exact 2*m*n*k (in __int128) when the count fits, and
 *    OVERFLOW exactly when it does not;
 *  - the same call gives the same answer twice.
 */
#include "fuzz_input.h"
#include "ops.h"

typedef __int128 big;
#define SENTINEL ((int64_t)0x5a5a5a5a5a5a5a5aLL)
#define SAT ((big)1 << 100)

/* a * b for 0 <= a, b, saturating at SAT (a zero factor gives 0). */
static big rmul(big a, big b)
{
    if (a == 0 || b == 0)
        return 0;
    if (a >= SAT || b >= SAT || a > SAT / b)
        return SAT;
    return a * b;
}

typedef struct fuzz_call {
    mfu_op_arg *args;
    size_t nargs;
    int64_t *blocks[2 * MFU_OP_ARGS_MAX]; /* heap arrays to free */
    size_t nblocks;
} fuzz_call;

static int64_t *block(fuzz_call *fc, size_t n)
{
    int64_t *p = malloc((n > 0 ? n : 1) * sizeof *p);
    if (p == NULL)
        abort();
    fc->blocks[fc->nblocks++] = p;
    return p;
}

static void read_arg(fuzz_input *in, fuzz_call *fc, mfu_op_arg *a)
{
    memset(a, 0, sizeof *a);
    switch (fi_u8(in) % 4) {
    case 1: {
        const size_t ndim = fi_u8(in) % 10;
        const uint8_t bits = fi_u8(in);
        int64_t *dims = block(fc, ndim);
        for (size_t i = 0; i < ndim; i++)
            dims[i] = fi_i64(in);
        a->type = MFU_ARG_TENSOR;
        a->ints = dims;
        a->count = ndim;
        a->requires_grad = bits & 1;
        int64_t numel = 1; /* the product of the sizes */
        for (size_t i = 0; i < ndim && numel >= 0; i++)
            numel = dims[i] < 0 || dims[i] > 64 ? -1 : numel * dims[i] > 64 ? -1 : numel * dims[i];
        if ((bits & 2) && numel >= 0) {
            int64_t *values = block(fc, (size_t)numel);
            for (int64_t i = 0; i < numel; i++)
                values[i] = (bits & 4) ? fi_i64(in) % 8 : fi_i64(in); /* small: block ids */
            a->values = values;
        }
        break;
    }
    case 2:
        a->type = MFU_ARG_INT;
        a->value = fi_i64(in);
        break;
    case 3: {
        const size_t n = fi_u8(in) % 10;
        int64_t *v = block(fc, n);
        for (size_t i = 0; i < n; i++)
            v[i] = fi_i64(in);
        a->type = MFU_ARG_INT_LIST;
        a->ints = v;
        a->count = n;
        break;
    }
    default:
        break; /* MFU_ARG_NONE */
    }
}

static mfu_status run(const mfu_op_spec *spec, const mfu_op_call *call,
                      mfu_op_flops *out, mfu_op_error *error)
{
    out->executed = SENTINEL;
    out->model_backward = 7;
    out->approximate = 9;
    out->model_self = 11;
    out->overcompute = 13;
    out->site = MFU_SITE_RECOMPUTE;
    out->overcompute_backward = 15;
    out->square_model = 17;
    out->mask_read = 19;
    out->mask_tensor = 21;
    error->argument = error->reason = NULL;
    return mfu_op_count(spec, call, out, error);
}

static int same(mfu_status s1, const mfu_op_flops *a, mfu_status s2,
                const mfu_op_flops *b)
{
    return s1 == s2 && a->executed == b->executed &&
           a->model_backward == b->model_backward &&
           a->approximate == b->approximate && a->model_self == b->model_self &&
           a->overcompute == b->overcompute && a->site == b->site &&
           a->overcompute_backward == b->overcompute_backward &&
           a->square_model == b->square_model && a->mask_read == b->mask_read &&
           a->mask_tensor == b->mask_tensor;
}

static int is_role_name(const char *s)
{
    for (int r = 0; r < MFU_ROLE_COUNT; r++)
        if (strcmp(s, mfu_op_role_name((mfu_op_role)r)) == 0)
            return 1;
    return 0;
}

/* mm / bmm: the exact count from the operands, when they are well formed. */
static void check_matmul_oracle(const mfu_op_spec *spec, const mfu_op_call *call,
                                mfu_status st, const mfu_op_flops *out)
{
    const int pa = mfu_op_position(spec, MFU_ROLE_A);
    const int pb = mfu_op_position(spec, MFU_ROLE_B);
    const size_t rank = spec->kind == MFU_OP_MM ? 2 : 3;
    if ((size_t)pa >= call->nargs || (size_t)pb >= call->nargs)
        return;
    const mfu_op_arg *a = &call->args[pa], *b = &call->args[pb];
    if (a->type != MFU_ARG_TENSOR || b->type != MFU_ARG_TENSOR ||
        a->count != rank || b->count != rank)
        return;
    for (size_t i = 0; i < rank; i++)
        if (a->ints[i] < 0 || b->ints[i] < 0)
            return;
    const int64_t *x = a->ints, *y = b->ints;
    big ref = 2;
    if (rank == 2) {
        /* a: [m, k] @ b: [k, n] */
        if (x[1] != y[0])
            return;
        const int64_t f[3] = {x[0], x[1], y[1]};
        for (int i = 0; i < 3; i++)
            ref = rmul(ref, f[i]);
    } else {
        /* a: [b, m, k] @ b: [b, k, n] */
        if (x[0] != y[0] || x[2] != y[1])
            return;
        const int64_t f[4] = {x[0], x[1], x[2], y[2]};
        for (int i = 0; i < 4; i++)
            ref = rmul(ref, f[i]);
    }
    if (ref > INT64_MAX) {
        FUZZ_CHECK(st == MFU_ERR_OVERFLOW);
    } else {
        FUZZ_CHECK(st == MFU_OK);
        FUZZ_CHECK((big)out->executed == ref);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input in = fi_make(data, size);
    const uint8_t row = fi_u8(&in), flags = fi_u8(&in);
    const mfu_op_spec *spec = mfu_op_table_row(row);
    fuzz_call fc = {NULL, (size_t)(fi_u8(&in) % (MFU_OP_ARGS_MAX + 1)), {NULL}, 0};
    mfu_op_flops out, again;
    mfu_op_error err, err2;
    mfu_status st, st2;

    fc.args = malloc((fc.nargs > 0 ? fc.nargs : 1) * sizeof *fc.args);
    if (fc.args == NULL)
        abort();
    for (size_t i = 0; i < fc.nargs; i++) {
        read_arg(&in, &fc, &fc.args[i]);
        fc.args[i].dtype = (flags >> 6) * 4; /* none, fp16, fp4, out of range */
    }

    /* the autograd situation of a backward-phase call, read last (older
     * corpus inputs end before it: the plain rule) */
    const uint8_t node_bits = fi_u8(&in);
    mfu_op_call call = {.args = fc.args,
                        .nargs = fc.nargs,
                        .causal = MFU_CAUSAL_FULL,
                        .backward_phase = (flags >> 2) & 1,
                        .grad_enabled = !((flags >> 3) & 1),
                        .tf32 = (flags >> 4) & 3,
                        .node = (mfu_op_node)(node_bits % 5), /* 4: out of range */
                        .saved_tensor_hooks = (node_bits >> 3) & 1,
                        .recomputed = (node_bits >> 4) & 1};
    const unsigned conv = flags & 3;
    call.causal = conv == 0 ? MFU_CAUSAL_FULL
                            : conv == 1 ? MFU_CAUSAL_HALF : (mfu_causal)(conv + 5);

    st = run(spec, &call, &out, &err);
    FUZZ_CHECK(st == MFU_OK || st == MFU_ERR_INVALID_ARGUMENT ||
               st == MFU_ERR_OVERFLOW);
    if (st == MFU_OK)
        FUZZ_CHECK((unsigned)out.dtype < MFU_DTYPE_COUNT && out.dtype != MFU_DTYPE_INT8);
    if (spec == NULL || conv >= 2 || call.node > MFU_NODE_CHECKPOINT)
        FUZZ_CHECK(st == MFU_ERR_INVALID_ARGUMENT);
    if (st != MFU_OK) {
        FUZZ_CHECK(out.executed == SENTINEL && out.model_backward == 7 &&
                   out.approximate == 9 && out.model_self == 11 && out.overcompute == 13 &&
                   out.site == MFU_SITE_RECOMPUTE && out.overcompute_backward == 15 &&
                   out.square_model == 17 && out.mask_read == 19 && out.mask_tensor == 21);
        FUZZ_CHECK(err.reason != NULL);
        FUZZ_CHECK(err.argument == NULL || is_role_name(err.argument));
    } else {
        const int backward_kind = spec->kind == MFU_OP_ATTENTION_BACKWARD ||
                                  spec->kind == MFU_OP_CONVOLUTION_BACKWARD;
        const uint64_t e = (uint64_t)out.executed;
        FUZZ_CHECK(out.executed >= 0);
        FUZZ_CHECK(out.model_backward == 0 || out.model_backward == e ||
                   out.model_backward == 2 * e);
        FUZZ_CHECK(out.site == mfu_op_site_of(&call));
        /* only a forward call anticipates a backward (ops.h "Reaching the
         * loss") */
        if (out.site != MFU_SITE_FORWARD || !call.grad_enabled || backward_kind)
            FUZZ_CHECK(out.model_backward == 0 && out.overcompute_backward == 0);
        if (!call.backward_phase || call.node == MFU_NODE_UNKNOWN)
            FUZZ_CHECK(out.site == (call.backward_phase ? MFU_SITE_BACKWARD
                                                        : MFU_SITE_FORWARD));
        /* model_self: at most executed, 0 where the site does not count it
         * (a backward counts where it runs) */
        FUZZ_CHECK(out.model_self >= 0 && out.model_self <= out.executed);
        if (out.site != MFU_SITE_FORWARD && out.site != MFU_SITE_BACKWARD &&
            out.site != MFU_SITE_CUSTOM_BACKWARD)
            FUZZ_CHECK(out.model_self == 0 && out.mask_read == 0 && out.mask_tensor == 0);
        /* overcompute: only a full-square kernel's, at most executed (its
         * anticipated backward's at most 2x) */
        FUZZ_CHECK(out.overcompute <= e && out.overcompute_backward <= 2 * e);
        if (!spec->full_square)
            FUZZ_CHECK(out.overcompute == 0 && out.overcompute_backward == 0 &&
                       out.square_model == 0);
        /* the mask notes: attention forward calls only, one or the other */
        FUZZ_CHECK(out.mask_read + out.mask_tensor <= 1);
        if (spec->kind != MFU_OP_ATTENTION)
            FUZZ_CHECK(out.mask_read == 0 && out.mask_tensor == 0);
        FUZZ_CHECK(out.approximate == 0 || out.approximate == 1);
        if (out.approximate)
            FUZZ_CHECK(spec->kind == MFU_OP_ATTENTION ||
                       spec->kind == MFU_OP_ATTENTION_BACKWARD);
    }

    /* deterministic */
    st2 = run(spec, &call, &again, &err2);
    FUZZ_CHECK(same(st, &out, st2, &again));

    if (spec != NULL && conv < 2) {
        /* only the listed positions are read */
        mfu_op_input inputs[MFU_ROLE_COUNT];
        const size_t n = mfu_op_inputs(spec, inputs);
        mfu_op_arg *junk = malloc((fc.nargs > 0 ? fc.nargs : 1) * sizeof *junk);
        static const int64_t bad_dims[1] = {-3};
        if (junk == NULL)
            abort();
        for (size_t i = 0; i < fc.nargs; i++) {
            int listed = 0;
            for (size_t j = 0; j < n; j++)
                listed |= (size_t)inputs[j].position == i;
            junk[i] = fc.args[i];
            if (!listed) {
                junk[i].type = (mfu_arg_type)(1 + i % 3);
                junk[i].ints = bad_dims;
                junk[i].count = 1;
                junk[i].value = -5;
            }
        }
        mfu_op_call junk_call = call;
        junk_call.args = junk;
        st2 = run(spec, &junk_call, &again, &err2);
        FUZZ_CHECK(same(st, &out, st2, &again));
        free(junk);

        /* the half convention: the same or exactly half, never refused
         * where full succeeds */
        if (call.causal == MFU_CAUSAL_FULL) {
            mfu_op_call half = call;
            half.causal = MFU_CAUSAL_HALF;
            st2 = run(spec, &half, &again, &err2);
            if (st == MFU_OK) {
                FUZZ_CHECK(st2 == MFU_OK);
                /* half never counts more than full (exactly half
                 * without a window; a window's kept pairs otherwise) */
                FUZZ_CHECK(again.executed <= out.executed);
                FUZZ_CHECK(again.model_self <= out.model_self);
                if (spec->kind != MFU_OP_ATTENTION &&
                    spec->kind != MFU_OP_ATTENTION_BACKWARD)
                    FUZZ_CHECK(same(st, &out, st2, &again));
            }
        }
        if ((spec->kind == MFU_OP_MM || spec->kind == MFU_OP_BMM) &&
            call.node <= MFU_NODE_CHECKPOINT) /* a bad node is refused first */
            check_matmul_oracle(spec, &call, st, &out);
    }

    for (size_t i = 0; i < fc.nblocks; i++)
        free(fc.blocks[i]);
    free(fc.args);
    return 0;
}
