/* test_ops.c -- the op table and mfu_op_count against hand arithmetic. */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "ops.h"

/* ---- building calls ----------------------------------------------------- */

static mfu_op_arg none(void)
{
    mfu_op_arg a;
    memset(&a, 0, sizeof a);
    return a;
}

static mfu_op_arg tensor(const int64_t *shape, size_t ndim, int requires_grad)
{
    mfu_op_arg a = none();
    a.type = MFU_ARG_TENSOR;
    a.ints = shape;
    a.count = ndim;
    a.requires_grad = requires_grad;
    return a;
}

/* A 1-D cumulative-lengths tensor; values NULL = unreadable (meta). */
static mfu_op_arg offsets(const int64_t *shape1, const int64_t *values)
{
    mfu_op_arg a = tensor(shape1, 1, 0);
    a.values = values;
    return a;
}

static mfu_op_arg integer(int64_t v)
{
    mfu_op_arg a = none();
    a.type = MFU_ARG_INT;
    a.value = v;
    return a;
}

static mfu_op_arg int_list(const int64_t *v, size_t n)
{
    mfu_op_arg a = none();
    a.type = MFU_ARG_INT_LIST;
    a.ints = v;
    a.count = n;
    return a;
}

/* A forward-phase call with grad mode on, full causal convention. */
static mfu_op_call call_of(const mfu_op_arg *args, size_t nargs)
{
    mfu_op_call c = {.args = args, .nargs = nargs, .causal = MFU_CAUSAL_FULL, .grad_enabled = 1};
    return c;
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

static mfu_status count(const char *op, const mfu_op_call *c, mfu_op_flops *f)
{
    mfu_op_error e = {NULL, NULL};
    return mfu_op_count(mfu_op_find(op), c, f, &e);
}

/* ---- the table ------------------------------------------------------------ */

static int has(const mfu_op_spec *s, mfu_op_role r)
{
    return mfu_op_position(s, r) >= 0;
}

static void test_table_rows_are_well_formed(void)
{
    const size_t n = mfu_op_table_size();
    CHECK(n == 40);
    for (size_t i = 0; i < n; i++) {
        const mfu_op_spec *s = mfu_op_table_row(i);
        mfu_op_input in[MFU_ROLE_COUNT];
        int seen[MFU_OP_ARGS_MAX] = {0};
        const size_t k = mfu_op_inputs(s, in);
        CHECK(s != NULL && strstr(s->name, "::") != NULL);
        CHECK(mfu_op_find(s->name) == s); /* names are unique */
        CHECK(mfu_op_kind_name(s->kind) != NULL);
        for (size_t j = 0; j < k; j++) {
            CHECK(in[j].position >= 0 && in[j].position < MFU_OP_ARGS_MAX);
            CHECK(!seen[in[j].position]); /* one role per position */
            seen[in[j].position] = 1;
            CHECK(j == 0 || in[j].position > in[j - 1].position);
            CHECK(in[j].need == mfu_op_role_need(in[j].role));
        }
        switch (s->kind) {
        case MFU_OP_MM:
        case MFU_OP_BMM:
        case MFU_OP_GROUPED_MM:
            CHECK(k == 2 && has(s, MFU_ROLE_A) && has(s, MFU_ROLE_B));
            CHECK(s->layout == MFU_LAYOUT_NONE);
            break;
        case MFU_OP_CONVOLUTION:
            CHECK(has(s, MFU_ROLE_INPUT) && has(s, MFU_ROLE_WEIGHT));
            CHECK(s->layout == MFU_LAYOUT_NONE);
            break;
        case MFU_OP_CONVOLUTION_BACKWARD:
            CHECK(has(s, MFU_ROLE_GRAD_OUTPUT) && has(s, MFU_ROLE_INPUT) &&
                  has(s, MFU_ROLE_WEIGHT) && has(s, MFU_ROLE_GROUPS));
            break;
        case MFU_OP_ATTENTION:
        case MFU_OP_ATTENTION_BACKWARD:
            CHECK(has(s, MFU_ROLE_QUERY) && has(s, MFU_ROLE_KEY) &&
                  has(s, MFU_ROLE_VALUE));
            /* exactly one way to say causal, or a block mask that says it
             * all (with its block sizes) */
            CHECK(has(s, MFU_ROLE_IS_CAUSAL) + has(s, MFU_ROLE_CUSTOM_MASK_TYPE) +
                      has(s, MFU_ROLE_KV_NUM_BLOCKS) == 1);
            CHECK(has(s, MFU_ROLE_KV_NUM_BLOCKS) == has(s, MFU_ROLE_KV_INDICES) &&
                  has(s, MFU_ROLE_KV_NUM_BLOCKS) == has(s, MFU_ROLE_Q_BLOCK_SIZE) &&
                  has(s, MFU_ROLE_KV_NUM_BLOCKS) == has(s, MFU_ROLE_KV_BLOCK_SIZE));
            /* a window has both sides */
            CHECK(has(s, MFU_ROLE_WINDOW_LEFT) == has(s, MFU_ROLE_WINDOW_RIGHT));
            CHECK(mfu_op_layout_name(s->layout) != NULL);
            CHECK(has(s, MFU_ROLE_CU_SEQLENS_Q) == has(s, MFU_ROLE_CU_SEQLENS_K));
            CHECK(s->layout != MFU_LAYOUT_THD || has(s, MFU_ROLE_CU_SEQLENS_Q));
            /* a backward kernel is named so */
            CHECK((s->kind == MFU_OP_ATTENTION_BACKWARD) ==
                  (strstr(s->name, "backward") != NULL ||
                   strcmp(s->name, "flash_attn_3::bwd") == 0));
            break;
        }
    }
    CHECK(mfu_op_find("aten::add") == NULL);
    CHECK(mfu_op_find("aten::mm.out") == NULL);
    CHECK(mfu_op_find(NULL) == NULL);
    CHECK(mfu_op_table_row(n) == NULL);
    CHECK(mfu_op_position(NULL, MFU_ROLE_A) == -1);
    CHECK(mfu_op_position(mfu_op_find("aten::addmm"), MFU_ROLE_A) == 1);
    CHECK(mfu_op_position(mfu_op_find("aten::addmm"), MFU_ROLE_QUERY) == -1);
    CHECK(strcmp(mfu_op_role_name(MFU_ROLE_CU_SEQLENS_Q), "cu_seqlens_q") == 0);
    CHECK(mfu_op_role_name(MFU_ROLE_COUNT) == NULL);
    CHECK(mfu_op_need_name(MFU_NEED_OFFSETS) != NULL);
    CHECK(mfu_op_inputs(NULL, NULL) == 0);
}

/* ---- matmul family ---------------------------------------------------------- */

static void test_matmul_and_the_backward_rule(void)
{
    const int64_t bias[1] = {6}, a[2] = {4, 5}, b[2] = {5, 6};
    mfu_op_arg args[3] = {tensor(bias, 1, 1), tensor(a, 2, 1), tensor(b, 2, 1)};
    mfu_op_call c = call_of(args, N(args));
    mfu_op_flops f;

    /* addmm(bias, a, b): 2 * 4 * 6 * 5 = 240, bias ignored; a and b need
     * gradients: model backward 2 x 240 */
    CHECK(count("aten::addmm", &c, &f) == MFU_OK);
    CHECK(f.executed == 240 && f.model_backward == 480 && !f.approximate);
    args[1].requires_grad = 0; /* a frozen input: weight gradient only */
    CHECK(count("aten::addmm", &c, &f) == MFU_OK && f.model_backward == 240);
    c.grad_enabled = 0; /* no_grad: forward only */
    CHECK(count("aten::addmm", &c, &f) == MFU_OK && f.executed == 240 &&
          f.model_backward == 0);
    c.grad_enabled = 1;
    c.backward_phase = 1; /* a backward-phase call is executed work only */
    CHECK(count("aten::addmm", &c, &f) == MFU_OK && f.model_backward == 0);

    /* mm reads positions 0 and 1: [6] @ [4, 5] is not 2-D x 2-D */
    c = call_of(args, N(args));
    mfu_op_error e = {NULL, NULL};
    f.executed = 777;
    CHECK(mfu_op_count(mfu_op_find("aten::mm"), &c, &f, &e) ==
          MFU_ERR_INVALID_ARGUMENT);
    CHECK(f.executed == 777); /* untouched */
    CHECK(e.argument != NULL && strcmp(e.argument, "a") == 0);
    /* inner dims differ: [4, 5] @ [4, 5] */
    mfu_op_arg mism[2] = {tensor(a, 2, 0), tensor(a, 2, 0)};
    c = call_of(mism, 2);
    CHECK(mfu_op_count(mfu_op_find("aten::mm"), &c, &f, &e) ==
          MFU_ERR_INVALID_ARGUMENT);
    CHECK(strcmp(e.argument, "b") == 0);
    /* a missing operand (only one argument passed) */
    c = call_of(mism, 1);
    CHECK(count("aten::mm", &c, &f) == MFU_ERR_INVALID_ARGUMENT);

    /* bmm: [3, 4, 5] @ [3, 5, 6]: 3 * 2 * 4 * 6 * 5 = 720 */
    const int64_t ba[3] = {3, 4, 5}, bb[3] = {3, 5, 6};
    mfu_op_arg bargs[2] = {tensor(ba, 3, 0), tensor(bb, 3, 1)};
    c = call_of(bargs, 2);
    CHECK(count("aten::bmm", &c, &f) == MFU_OK && f.executed == 720 &&
          f.model_backward == 720);

    /* _grouped_mm: a [8, 16] rows over 4 experts b [4, 16, 8]:
     * 2 * 8 * 16 * 8 = 2,048 */
    const int64_t ga[2] = {8, 16}, gb[3] = {4, 16, 8};
    mfu_op_arg gargs[2] = {tensor(ga, 2, 1), tensor(gb, 3, 1)};
    c = call_of(gargs, 2);
    CHECK(count("aten::_grouped_mm", &c, &f) == MFU_OK && f.executed == 2048 &&
          f.model_backward == 2 * 2048);

    /* 2 * 1 * (2^62 - 1) * 1 = 2^63 - 2 fits; its model backward 2 x that
     * (2^64 - 4) fits uint64; 2^62 overflows */
    const int64_t one[2] = {1, 1}, wide[2] = {1, (INT64_C(1) << 62) - 1};
    mfu_op_arg big[2] = {tensor(one, 2, 1), tensor(wide, 2, 1)};
    c = call_of(big, 2);
    CHECK(count("aten::mm", &c, &f) == MFU_OK && f.executed == INT64_MAX - 1);
    CHECK(f.model_backward == UINT64_MAX - 3);
    const int64_t wider[2] = {1, INT64_C(1) << 62};
    big[1] = tensor(wider, 2, 1);
    CHECK(mfu_op_count(mfu_op_find("aten::mm"), &c, &f, &e) == MFU_ERR_OVERFLOW);
    CHECK(e.argument == NULL && strstr(e.reason, "int64") != NULL);
}

/* ---- convolution ---------------------------------------------------------- */

static void test_convolution(void)
{
    const int64_t x[4] = {2, 3, 8, 8}, w[4] = {4, 3, 3, 3};
    const int64_t s2[1] = {2}, p1[2] = {1, 1}, d1[1] = {1};
    mfu_op_arg args[9] = {tensor(x, 4, 1), tensor(w, 4, 1), none(), none(),
                          none(), none(), integer(0), none(), integer(1)};
    mfu_op_call c = call_of(args, N(args));
    mfu_op_flops f;

    /* defaults: out [2, 4, 6, 6]: 2 * 2 * 36 * 4 * 3 * 9 = 15,552; input
     * and weight gradients: 2 x */
    CHECK(count("aten::convolution", &c, &f) == MFU_OK);
    CHECK(f.executed == 15552 && f.model_backward == 2 * 15552);
    /* stride 2 (one value: every dim), padding 1: out (8 + 2 - 2 - 1) / 2 + 1
     * = 4 -> 2 * 2 * 16 * 4 * 3 * 9 = 6,912 */
    args[3] = int_list(s2, 1);
    args[4] = int_list(p1, 2);
    args[5] = int_list(d1, 1);
    CHECK(count("aten::convolution", &c, &f) == MFU_OK && f.executed == 6912);
    /* a kernel bigger than the padded input: 0 output points */
    const int64_t wbig[4] = {4, 3, 11, 11};
    args[1] = tensor(wbig, 4, 1);
    CHECK(count("aten::convolution", &c, &f) == MFU_OK && f.executed == 0);
    args[1] = tensor(w, 4, 1);
    /* transposed: every input point scatters: 2 * 2 * 64 * 4 * 3 * 9 = 27,648 */
    args[6] = integer(1);
    CHECK(count("aten::convolution", &c, &f) == MFU_OK && f.executed == 27648);
    args[6] = integer(0);
    /* bad parameters name themselves */
    mfu_op_error e = {NULL, NULL};
    const int64_t s0[1] = {0}, three[3] = {1, 1, 1};
    args[3] = int_list(s0, 1);
    CHECK(mfu_op_count(mfu_op_find("aten::convolution"), &c, &f, &e) ==
          MFU_ERR_INVALID_ARGUMENT && strcmp(e.argument, "stride") == 0);
    args[3] = int_list(three, 3); /* 3 values for 2 spatial dims */
    CHECK(mfu_op_count(mfu_op_find("aten::convolution"), &c, &f, &e) ==
          MFU_ERR_INVALID_ARGUMENT && strcmp(e.argument, "stride") == 0);
    args[3] = none();
    const int64_t huge_pad[1] = {INT64_MAX / 2};
    args[4] = int_list(huge_pad, 1);
    CHECK(mfu_op_count(mfu_op_find("aten::convolution"), &c, &f, &e) ==
          MFU_ERR_OVERFLOW && strcmp(e.argument, "padding") == 0);
    args[4] = none();
    /* cudnn_convolution(self, weight, padding, stride, dilation, ...):
     * other positions, same count */
    mfu_op_arg cud[5] = {tensor(x, 4, 0), tensor(w, 4, 1), int_list(p1, 2),
                         int_list(s2, 1), int_list(d1, 1)};
    c = call_of(cud, 5);
    CHECK(count("aten::cudnn_convolution", &c, &f) == MFU_OK &&
          f.executed == 6912 && f.model_backward == 6912);
    /* a 2-D input is not a convolution input */
    mfu_op_arg flat[2] = {tensor(x, 2, 0), tensor(w, 2, 0)};
    c = call_of(flat, 2);
    CHECK(mfu_op_count(mfu_op_find("aten::convolution"), &c, &f, &e) ==
          MFU_ERR_INVALID_ARGUMENT && strcmp(e.argument, "input") == 0);
}

static void test_convolution_backward(void)
{
    const int64_t go[4] = {2, 4, 6, 6}, x[4] = {2, 3, 8, 8}, w[4] = {4, 3, 3, 3};
    const int64_t both[3] = {1, 1, 0}, weight_only[3] = {0, 1, 0};
    mfu_op_arg args[11] = {tensor(go, 4, 0), tensor(x, 4, 1), tensor(w, 4, 1),
                           none(), none(), none(), none(), integer(0), none(),
                           integer(1), int_list(both, 3)};
    mfu_op_call c = call_of(args, N(args));
    mfu_op_flops f;

    /* input grad = the forward 15,552; weight grad 2 * n * c_in * c_out *
     * out points * k = 2 * 2 * 3 * 4 * 36 * 9 = 15,552; backward work:
     * no model backward */
    CHECK(count("aten::convolution_backward", &c, &f) == MFU_OK);
    CHECK(f.executed == 2 * 15552 && f.model_backward == 0);
    args[10] = int_list(weight_only, 3);
    CHECK(count("aten::convolution_backward", &c, &f) == MFU_OK && f.executed == 15552);
    args[10] = none(); /* absent: every gradient */
    CHECK(count("aten::convolution_backward", &c, &f) == MFU_OK &&
          f.executed == 2 * 15552);
    /* groups that do not divide the channels */
    args[9] = integer(2);
    CHECK(count("aten::convolution_backward", &c, &f) == MFU_ERR_INVALID_ARGUMENT);
}

/* ---- attention ------------------------------------------------------------ */

static void test_sdpa_and_causal(void)
{
    /* q, k, v: [b 1, h 2, s 8, d 4]; forward 2*b*h*s*s*(d + d)
     * = 2 * 1 * 2 * 8 * 8 * 8 = 2,048 */
    const int64_t q[4] = {1, 2, 8, 4};
    mfu_op_arg args[5] = {tensor(q, 4, 1), tensor(q, 4, 1), tensor(q, 4, 1),
                          none(), integer(1)};
    mfu_op_call c = call_of(args, N(args));
    mfu_op_flops f;
    const char *flash = "aten::_scaled_dot_product_flash_attention_for_cpu";

    CHECK(count(flash, &c, &f) == MFU_OK);
    CHECK(f.executed == 2048 && f.model_backward == 2 * 2048); /* PaLM 2x */
    c.causal = MFU_CAUSAL_HALF; /* is_causal and the half convention */
    CHECK(count(flash, &c, &f) == MFU_OK && f.executed == 1024);
    args[4] = integer(0); /* not causal: in full whatever the convention */
    CHECK(count(flash, &c, &f) == MFU_OK && f.executed == 2048);
    args[0].requires_grad = args[1].requires_grad = args[2].requires_grad = 0;
    CHECK(count(flash, &c, &f) == MFU_OK && f.model_backward == 0);
    c.causal = (mfu_causal)7;
    CHECK(count(flash, &c, &f) == MFU_ERR_INVALID_ARGUMENT);

    /* the backward kernel (grad_out first): 2*b*h*s*s*(3d + 2d)
     * = 2 * 1 * 2 * 8 * 8 * 20 = 5,120 (2.5x), no model backward */
    mfu_op_arg bargs[8] = {tensor(q, 4, 0), tensor(q, 4, 1), tensor(q, 4, 1),
                           tensor(q, 4, 1), none(), none(), none(), integer(1)};
    c = call_of(bargs, N(bargs));
    CHECK(count("aten::_scaled_dot_product_flash_attention_for_cpu_backward", &c, &f)
          == MFU_OK);
    CHECK(f.executed == 5120 && f.model_backward == 0);
    CHECK_NEAR((double)f.executed / 2048.0, 2.5, 0.0); /* flops.h: 2.5x */

    /* GQA: k, v with 1 head of 2 (the work is done for h = 2) */
    const int64_t kv[4] = {1, 1, 8, 4}, kv3[4] = {1, 3, 8, 4};
    mfu_op_arg gqa[5] = {tensor(q, 4, 0), tensor(kv, 4, 0), tensor(kv, 4, 0),
                         none(), integer(0)};
    c = call_of(gqa, 5);
    CHECK(count(flash, &c, &f) == MFU_OK && f.executed == 2048);
    gqa[1] = gqa[2] = tensor(kv3, 4, 0); /* 3 kv heads do not divide 2 */
    CHECK(count(flash, &c, &f) == MFU_ERR_INVALID_ARGUMENT);
}

static void test_kernel_layout_and_mask_type(void)
{
    /* _flash_attention_forward, q: [b 2, s 8, h 4, d 16] (BSHD):
     * 2 * 2 * 4 * 8 * 8 * (16 + 16) = 32,768 */
    const int64_t q[4] = {2, 8, 4, 16};
    mfu_op_arg args[9] = {tensor(q, 4, 1), tensor(q, 4, 0), tensor(q, 4, 0),
                          none(), none(), integer(8), integer(8), none(),
                          integer(0)};
    mfu_op_call c = call_of(args, N(args));
    mfu_op_flops f;
    CHECK(count("aten::_flash_attention_forward", &c, &f) == MFU_OK);
    CHECK(f.executed == 32768 && f.model_backward == 2 * 32768);

    /* _efficient_attention_forward, custom_mask_type 1 (causal) at 9 */
    mfu_op_arg eff[10] = {tensor(q, 4, 0), tensor(q, 4, 0), tensor(q, 4, 0),
                          none(), none(), none(), none(), none(), none(),
                          integer(1)};
    c = call_of(eff, N(eff));
    c.causal = MFU_CAUSAL_HALF;
    CHECK(count("aten::_efficient_attention_forward", &c, &f) == MFU_OK &&
          f.executed == 16384);
    eff[9] = integer(0); /* no mask */
    CHECK(count("aten::_efficient_attention_forward", &c, &f) == MFU_OK &&
          f.executed == 32768);
}

static void test_varlen(void)
{
    /* packed flash: q [10, 4, 8], k = v [10, 2, 8], sequences of 3 and 7:
     * per sequence 2 * 1 * 4 * s * s * (8 + 8) = 128 s^2 -> 128 * (9 + 49)
     * = 7,424 */
    const int64_t q[3] = {10, 4, 8}, kv[3] = {10, 2, 8}, n3[1] = {3};
    const int64_t cu[3] = {0, 3, 10};
    mfu_op_arg args[9] = {tensor(q, 3, 1), tensor(kv, 3, 0), tensor(kv, 3, 0),
                          offsets(n3, cu), offsets(n3, cu), integer(7),
                          integer(7), none(), integer(1)};
    mfu_op_call c = call_of(args, N(args));
    mfu_op_flops f;
    CHECK(count("aten::_flash_attention_forward", &c, &f) == MFU_OK);
    CHECK(f.executed == 7424 && !f.approximate && f.model_backward == 2 * 7424);
    /* lengths unknown (meta): both sequences count max_seqlen 7:
     * 2 * 128 * 49 = 12,544, flagged */
    args[3] = offsets(n3, NULL);
    args[4] = offsets(n3, NULL);
    CHECK(count("aten::_flash_attention_forward", &c, &f) == MFU_OK);
    CHECK(f.executed == 12544 && f.approximate);
    /* cu_seqlens_k absent: the same as q's */
    args[3] = offsets(n3, cu);
    args[4] = none();
    CHECK(count("aten::_flash_attention_forward", &c, &f) == MFU_OK &&
          f.executed == 7424);
    /* cumulative lengths of different lengths */
    const int64_t n2[1] = {2}, cu2[2] = {0, 10};
    args[4] = offsets(n2, cu2);
    mfu_op_error e = {NULL, NULL};
    CHECK(mfu_op_count(mfu_op_find("aten::_flash_attention_forward"), &c, &f, &e)
          == MFU_ERR_INVALID_ARGUMENT && strcmp(e.argument, "cu_seqlens_k") == 0);
    /* decreasing offsets */
    const int64_t down[3] = {0, 7, 3};
    args[3] = args[4] = offsets(n3, down);
    CHECK(count("aten::_flash_attention_forward", &c, &f) == MFU_ERR_INVALID_ARGUMENT);

    /* torch_attn::_varlen_attn (THD): the same call; without lengths it
     * cannot be counted */
    mfu_op_arg v[8] = {tensor(q, 3, 0), tensor(kv, 3, 0), tensor(kv, 3, 0),
                       offsets(n3, cu), none(), integer(7), integer(7),
                       integer(1)};
    c = call_of(v, N(v));
    c.causal = MFU_CAUSAL_HALF;
    CHECK(count("torch_attn::_varlen_attn", &c, &f) == MFU_OK && f.executed == 3712);
    v[3] = none();
    CHECK(mfu_op_count(mfu_op_find("torch_attn::_varlen_attn"), &c, &f, &e) ==
          MFU_ERR_INVALID_ARGUMENT && strcmp(e.argument, "cu_seqlens_q") == 0);
    /* a 2-D offsets tensor */
    const int64_t two_d[2] = {3, 1};
    v[3] = tensor(two_d, 2, 0);
    CHECK(count("torch_attn::_varlen_attn", &c, &f) == MFU_ERR_INVALID_ARGUMENT);
}

/* ---- custom formulas and bad calls --------------------------------------- */

static void test_flash_attn_and_flex_rows(void)
{
    /* flash_attn::_flash_attn_forward, q: [b 2, s 8, h 4, d 16]; causal at
     * 5, window_size_left at 6, window_size_right at 7 */
    const int64_t qs[4] = {2, 8, 4, 16};
    mfu_op_arg args[8];
    mfu_op_flops f;
    for (int i = 0; i < 3; i++)
        args[i] = tensor(qs, 4, 1);
    args[3] = integer(0);
    args[4] = integer(0);
    args[5] = integer(1);
    args[6] = integer(2); /* a causal window of 3 keys */
    args[7] = integer(-1);
    mfu_op_call c = call_of(args, N(args));
    /* full 8 * 3 = 24 pairs: 2 * 2 * 4 * 24 * 32 = 12,288, model 3x */
    CHECK(count("flash_attn::_flash_attn_forward", &c, &f) == MFU_OK && f.executed == 12288 &&
          f.model_backward == 2 * 12288);
    c.causal = MFU_CAUSAL_HALF; /* 1 + 2 + 3 * 6 = 21 pairs */
    CHECK(count("flash_attn::_flash_attn_forward", &c, &f) == MFU_OK && f.executed == 10752);
    args[6] = integer(-1); /* no window: plain causal, halved */
    CHECK(count("flash_attn::_flash_attn_forward", &c, &f) == MFU_OK && f.executed == 16384);
    /* an int role given something else (a list) is absent: its default, no
     * window (not a window of value 0, one key: 2 * 2 * 4 * 8 * 32 = 4,096) */
    const int64_t pair[2] = {2, 2};
    args[6] = int_list(pair, 2);
    CHECK(count("flash_attn::_flash_attn_forward", &c, &f) == MFU_OK && f.executed == 16384);

    /* flex_attention (flat: q, k, v, kv_num_blocks, kv_indices, full
     * counts, full indices, q block, kv block), q: [b 1, h 2, s 8, d 16],
     * blocks of 4: row 0 block 0, row 1 blocks 0 and 1: 48 pairs */
    const int64_t fq[4] = {1, 2, 8, 16}, nshape[3] = {1, 1, 2}, ishape[4] = {1, 1, 2, 2};
    const int64_t num[2] = {1, 2}, idx[4] = {0, 0, 0, 1};
    mfu_op_arg flex[9];
    for (int i = 0; i < 3; i++)
        flex[i] = tensor(fq, 4, 0);
    flex[3] = tensor(nshape, 3, 0);
    flex[3].values = num;
    flex[4] = tensor(ishape, 4, 0);
    flex[4].values = idx;
    flex[5] = none();
    flex[6] = none();
    flex[7] = integer(4);
    flex[8] = integer(4);
    c = call_of(flex, N(flex));
    /* 2 * 1 * 2 * 48 * (16 + 16) = 6,144 under both conventions */
    CHECK(count("higher_order::flex_attention", &c, &f) == MFU_OK && f.executed == 6144 &&
          f.model_backward == 0 && !f.approximate);
    c.causal = MFU_CAUSAL_HALF;
    CHECK(count("higher_order::flex_attention", &c, &f) == MFU_OK && f.executed == 6144);
    /* unreadable (meta): every block, 2 * 2 * 64 * 32 = 8,192, approximate */
    flex[3].values = NULL;
    CHECK(count("higher_order::flex_attention", &c, &f) == MFU_OK && f.executed == 8192 &&
          f.approximate);
    /* unreadable, one query block over all 8 queries but key blocks of 4:
     * the key side is still split, approximate; blocks of 8 x 8 are the
     * whole rectangle, exact */
    flex[7] = integer(8);
    CHECK(count("higher_order::flex_attention", &c, &f) == MFU_OK && f.executed == 8192 &&
          f.approximate);
    flex[8] = integer(8);
    CHECK(count("higher_order::flex_attention", &c, &f) == MFU_OK && f.executed == 8192 &&
          !f.approximate);
    flex[7] = integer(4);
    flex[8] = integer(4);
    /* a block size of 0, an index outside the keys' blocks... */
    flex[3].values = num;
    flex[7] = integer(0);
    CHECK(count("higher_order::flex_attention", &c, &f) == MFU_ERR_INVALID_ARGUMENT);
    flex[7] = integer(4);
    flex[4] = tensor(nshape, 3, 0); /* indices of the wrong rank */
    CHECK(count("higher_order::flex_attention", &c, &f) == MFU_ERR_INVALID_ARGUMENT);
}

static void test_custom_and_bad_calls(void)
{
    mfu_op_call c = call_of(NULL, 0);
    mfu_op_flops f;
    /* a bare count: a declared model backward of 2x (as attention) when an
     * input needs grad, charged at the forward in model_self (ops.h
     * "Reaching the loss": the count cannot see an opaque backward run) */
    CHECK(mfu_op_custom_flops(100, -1, 1, &c, &f) == MFU_OK);
    CHECK(f.executed == 100 && f.model_self == 100 + 200 && f.model_backward == 0);
    CHECK(mfu_op_custom_flops(100, 50, 1, &c, &f) == MFU_OK && f.model_self == 150);
    CHECK(mfu_op_custom_flops(100, 50, 0, &c, &f) == MFU_OK && f.model_self == 100);
    CHECK(mfu_op_custom_flops(INT64_MAX, -1, 1, &c, &f) == MFU_ERR_OVERFLOW);
    c.backward_phase = 1;
    CHECK(mfu_op_custom_flops(100, -1, 1, &c, &f) == MFU_OK && f.model_backward == 0 &&
          f.model_self == 100 && f.site == MFU_SITE_BACKWARD);
    CHECK(mfu_op_custom_flops(-1, -1, 1, &c, &f) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_op_custom_flops(1, -2, 1, &c, &f) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_op_custom_flops(1, -1, 1, NULL, &f) == MFU_ERR_INVALID_ARGUMENT);

    mfu_op_error e = {NULL, NULL};
    c = call_of(NULL, 0);
    CHECK(mfu_op_count(NULL, &c, &f, &e) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_op_count(mfu_op_find("aten::mm"), NULL, &f, NULL) ==
          MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_op_count(mfu_op_find("aten::mm"), &c, NULL, NULL) ==
          MFU_ERR_INVALID_ARGUMENT);
    /* no arguments at all */
    CHECK(mfu_op_count(mfu_op_find("aten::mm"), &c, &f, &e) ==
          MFU_ERR_INVALID_ARGUMENT && strcmp(e.reason, "is not a tensor") == 0);
    /* an int where a tensor belongs; a negative size */
    const int64_t neg[2] = {-1, 4};
    mfu_op_arg args[2] = {integer(3), tensor(neg, 2, 0)};
    c = call_of(args, 2);
    CHECK(count("aten::mm", &c, &f) == MFU_ERR_INVALID_ARGUMENT);
    args[0] = tensor(neg, 2, 0);
    CHECK(mfu_op_count(mfu_op_find("aten::mm"), &c, &f, &e) ==
          MFU_ERR_INVALID_ARGUMENT && strcmp(e.reason, "has a negative size") == 0);
}

/* The compute dtype: the first operand's, fp32 without one, TF32 where the
 * call allows it for the op's kind. */
static void test_compute_dtype(void)
{
    const int64_t a[] = {4, 5}, b[] = {5, 6};
    mfu_op_arg args[2] = {tensor(a, 2, 0), tensor(b, 2, 0)};
    mfu_op_call c = call_of(args, N(args));
    mfu_op_flops f;

    CHECK(count("aten::mm", &c, &f) == MFU_OK && f.dtype == MFU_DTYPE_FP32); /* none */
    args[0].dtype = MFU_OP_DTYPE(MFU_DTYPE_BF16);
    args[1].dtype = MFU_OP_DTYPE(MFU_DTYPE_FP8); /* the first operand decides */
    CHECK(count("aten::mm", &c, &f) == MFU_OK && f.dtype == MFU_DTYPE_BF16);
    CHECK(f.executed == 2 * 4 * 5 * 6);
    args[0].dtype = MFU_OP_DTYPE(MFU_DTYPE_FP8);
    CHECK(count("aten::mm", &c, &f) == MFU_OK && f.dtype == MFU_DTYPE_FP8);
    args[0].dtype = MFU_OP_DTYPE(MFU_DTYPE_FP32);
    c.tf32 = MFU_TF32_CONV; /* not for matmuls */
    CHECK(count("aten::mm", &c, &f) == MFU_OK && f.dtype == MFU_DTYPE_FP32);
    c.tf32 = MFU_TF32_MATMUL;
    CHECK(count("aten::mm", &c, &f) == MFU_OK && f.dtype == MFU_DTYPE_TF32);
    args[0].dtype = MFU_OP_DTYPE(MFU_DTYPE_FP16); /* TF32 replaces fp32 only */
    CHECK(count("aten::mm", &c, &f) == MFU_OK && f.dtype == MFU_DTYPE_FP16);
    /* every dtype, the first and the last code included, as itself (no
     * TF32 here: fp32 stays fp32) */
    c.tf32 = 0;
    for (int d = 0; d < MFU_DTYPE_COUNT; d++) {
        args[0].dtype = MFU_OP_DTYPE(d);
        CHECK(count("aten::mm", &c, &f) == MFU_OK && f.dtype == (mfu_dtype)d);
    }
    args[0].dtype = MFU_OP_DTYPE(MFU_DTYPE_COUNT); /* one past the last: as no dtype */
    CHECK(count("aten::mm", &c, &f) == MFU_OK && f.dtype == MFU_DTYPE_FP32);
    args[0].dtype = 99; /* out of range: as no dtype */
    c.tf32 = 0;
    CHECK(count("aten::mm", &c, &f) == MFU_OK && f.dtype == MFU_DTYPE_FP32);

    /* convolution: the input's dtype, TF32 under MFU_TF32_CONV */
    const int64_t x[] = {1, 2, 5, 5}, w[] = {3, 2, 3, 3};
    mfu_op_arg conv[2] = {tensor(x, 4, 0), tensor(w, 4, 0)};
    mfu_op_call cc = call_of(conv, N(conv));
    conv[0].dtype = MFU_OP_DTYPE(MFU_DTYPE_FP32);
    cc.tf32 = MFU_TF32_MATMUL;
    CHECK(count("aten::convolution", &cc, &f) == MFU_OK && f.dtype == MFU_DTYPE_FP32);
    cc.tf32 = MFU_TF32_CONV;
    CHECK(count("aten::convolution", &cc, &f) == MFU_OK && f.dtype == MFU_DTYPE_TF32);

    /* a custom formula: call->input_dtype */
    c.input_dtype = MFU_OP_DTYPE(MFU_DTYPE_FP64);
    CHECK(mfu_op_custom_flops(10, -1, 1, &c, &f) == MFU_OK && f.dtype == MFU_DTYPE_FP64);
    c.input_dtype = 0;
    CHECK(mfu_op_custom_flops(10, -1, 1, &c, &f) == MFU_OK && f.dtype == MFU_DTYPE_FP32);
}

/* Causal "half" on every path (ops.h "Causal attention"): model FLOPs halve
 * the square forward and backward; executed FLOPs are what the kernel
 * computes -- the math path the full square (forward here, backward through
 * its bmms' autograd), the fused kernels half -- and the math path's excess
 * is overcompute, never recompute. */
static void test_causal_half_on_every_path(void)
{
    /* q, k, v: [1, 2, 8, 4]: full forward 2 * 1 * 2 * 8 * 8 * (4 + 4) = 2,048 */
    const int64_t q[4] = {1, 2, 8, 4};
    mfu_op_arg args[6] = {tensor(q, 4, 1), tensor(q, 4, 1), tensor(q, 4, 1),
                          none(), none(), integer(1)};
    mfu_op_call c = call_of(args, N(args));
    mfu_op_flops f;
    const char *math = "aten::_scaled_dot_product_attention_math";

    CHECK(mfu_op_find(math)->full_square == 1);
    CHECK(mfu_op_find("aten::_scaled_dot_product_flash_attention_for_cpu")->full_square == 0);
    /* full convention: everything full, no overcompute */
    CHECK(count(math, &c, &f) == MFU_OK && f.executed == 2048 &&
          f.model_self == 2048 && f.model_backward == 4096 && f.overcompute == 0);
    /* half: executed 2,048 (full square), model 1,024 + 2 x 1,024
     * anticipated; the excess 1,024 forward + 2 x 1,024 in its backward
     * bmms (anticipated) */
    c.causal = MFU_CAUSAL_HALF;
    CHECK(count(math, &c, &f) == MFU_OK);
    CHECK(f.executed == 2048 && f.model_self == 1024 && f.model_backward == 2048);
    CHECK(f.overcompute == 1024 && f.overcompute_backward == 2 * 1024);
    CHECK(f.square_model == 1024 && f.mask_read == 1 && f.mask_tensor == 0);
    /* no grad: the forward's excess only */
    c.grad_enabled = 0;
    CHECK(count(math, &c, &f) == MFU_OK && f.model_backward == 0 &&
          f.overcompute == 1024 && f.overcompute_backward == 0);
    c.grad_enabled = 1;
    /* its backward's bmms (the caller tells them by their autograd nodes):
     * each counts the call's share, 1,024 / 2,048, the rest over-compute;
     * under "full" (or not told) the whole */
    const int64_t ga[3] = {2, 8, 4}, gb[3] = {2, 4, 8};
    mfu_op_arg bmm[2] = {tensor(ga, 3, 0), tensor(gb, 3, 0)};
    mfu_op_call g = call_of(bmm, N(bmm));
    g.backward_phase = 1;
    g.grad_enabled = 0;
    g.node = MFU_NODE_BUILTIN;
    g.causal = MFU_CAUSAL_HALF;
    g.square_model = 1024;
    g.square_executed = 2048;
    /* 2 * 2 * 8 * 4 * 8 = 1,024 executed, 512 model, 512 over-compute */
    CHECK(count("aten::bmm", &g, &f) == MFU_OK && f.site == MFU_SITE_BACKWARD &&
          f.executed == 1024 && f.model_self == 512 && f.overcompute == 512);
    g.causal = MFU_CAUSAL_FULL;
    CHECK(count("aten::bmm", &g, &f) == MFU_OK && f.model_self == 1024 && f.overcompute == 0);
    g.causal = MFU_CAUSAL_HALF;
    g.square_executed = 0;
    CHECK(count("aten::bmm", &g, &f) == MFU_OK && f.model_self == 1024 && f.overcompute == 0);
    /* a mask tensor without a causal flag: counted whole, and said so */
    args[3] = tensor(q, 4, 0);
    args[5] = integer(0);
    CHECK(count(math, &c, &f) == MFU_OK && f.model_self == 2048 && f.mask_tensor == 1 &&
          f.mask_read == 0 && f.overcompute == 0);
    args[5] = integer(1); /* with the flag: the flag is read */
    CHECK(count(math, &c, &f) == MFU_OK && f.model_self == 1024 && f.mask_tensor == 0 &&
          f.mask_read == 1);
    args[3] = none();
    /* a fused kernel computes half: executed = model = 1,024, no excess */
    mfu_op_arg fargs[5] = {tensor(q, 4, 1), tensor(q, 4, 1), tensor(q, 4, 1),
                           none(), integer(1)};
    mfu_op_call fc = call_of(fargs, N(fargs));
    fc.causal = MFU_CAUSAL_HALF;
    CHECK(count("aten::_scaled_dot_product_flash_attention_for_cpu", &fc, &f) == MFU_OK);
    CHECK(f.executed == 1024 && f.model_self == 1024 && f.model_backward == 2048 &&
          f.overcompute == 0);
    /* its backward kernel: executed 2.5 x 1,024 = 2,560; as model work (a
     * custom backward) 2 x 1,024 = 2,048: the score recompute is not model */
    mfu_op_arg bargs[8] = {tensor(q, 4, 0), tensor(q, 4, 1), tensor(q, 4, 1),
                           tensor(q, 4, 1), none(), none(), none(), integer(1)};
    mfu_op_call bc = call_of(bargs, N(bargs));
    bc.causal = MFU_CAUSAL_HALF;
    bc.backward_phase = 1;
    bc.grad_enabled = 0;
    bc.node = MFU_NODE_CUSTOM;
    CHECK(count("aten::_scaled_dot_product_flash_attention_for_cpu_backward", &bc, &f)
          == MFU_OK);
    CHECK(f.executed == 2560 && f.model_self == 2048 && f.model_backward == 0 &&
          f.site == MFU_SITE_CUSTOM_BACKWARD);
    /* autograd's own backward counts the same, as it runs (ops.h
     * "Reaching the loss") */
    bc.node = MFU_NODE_BUILTIN;
    CHECK(count("aten::_scaled_dot_product_flash_attention_for_cpu_backward", &bc, &f)
          == MFU_OK && f.executed == 2560 && f.model_self == 2048 &&
          f.site == MFU_SITE_BACKWARD && f.mask_read == 0);
}

/* Sites (ops.h): what a call adds depends on where it runs. */
static void test_sites(void)
{
    /* mm [4, 5] @ [5, 6], both requiring grad: 2 * 4 * 5 * 6 = 240 */
    const int64_t a[2] = {4, 5}, b[2] = {5, 6};
    mfu_op_arg args[2] = {tensor(a, 2, 1), tensor(b, 2, 1)};
    mfu_op_call c = call_of(args, N(args));
    mfu_op_flops f;

    CHECK(mfu_op_site_of(&c) == MFU_SITE_FORWARD);
    CHECK(count("aten::mm", &c, &f) == MFU_OK && f.site == MFU_SITE_FORWARD &&
          f.model_self == 240 && f.model_backward == 480);
    /* forward of a custom Function (grad mode off): its own FLOPs only */
    c.grad_enabled = 0;
    CHECK(count("aten::mm", &c, &f) == MFU_OK && f.model_self == 240 &&
          f.model_backward == 0);
    /* backward phase, node unknown: the backward that runs counts as model
     * FLOPs where it runs, anticipating nothing */
    c.backward_phase = 1;
    CHECK(count("aten::mm", &c, &f) == MFU_OK && f.site == MFU_SITE_BACKWARD &&
          f.executed == 240 && f.model_self == 240 && f.model_backward == 0);
    /* autograd's own backward */
    c.node = MFU_NODE_BUILTIN;
    CHECK(count("aten::mm", &c, &f) == MFU_OK && f.site == MFU_SITE_BACKWARD &&
          f.model_self == 240);
    /* ... with create_graph=True (grad mode on): the same */
    c.grad_enabled = 1;
    CHECK(count("aten::mm", &c, &f) == MFU_OK && f.site == MFU_SITE_BACKWARD &&
          f.model_self == 240 && f.model_backward == 0);
    c.grad_enabled = 0;
    /* a custom Function's backward: model FLOPs as it runs */
    c.node = MFU_NODE_CUSTOM;
    CHECK(count("aten::mm", &c, &f) == MFU_OK && f.site == MFU_SITE_CUSTOM_BACKWARD &&
          f.model_self == 240 && f.model_backward == 0);
    /* ... unless its node is a recomputed part of a compiled backward */
    c.recomputed = 1;
    CHECK(count("aten::mm", &c, &f) == MFU_OK && f.site == MFU_SITE_RECOMPUTE &&
          f.model_self == 0);
    c.recomputed = 0;
    /* a reentrant checkpoint's recompute (grad on, no saved-tensor hooks):
     * no model FLOPs (its nested backward counts its own where it runs) */
    c.node = MFU_NODE_CHECKPOINT;
    c.grad_enabled = 1;
    CHECK(count("aten::mm", &c, &f) == MFU_OK &&
          f.site == MFU_SITE_RECOMPUTE_BACKPROP && f.model_self == 0 &&
          f.model_backward == 0);
    /* a custom Function's backward run with grad on (it recomputes, then
     * backpropagates): the same */
    c.node = MFU_NODE_CUSTOM;
    CHECK(count("aten::mm", &c, &f) == MFU_OK &&
          f.site == MFU_SITE_RECOMPUTE_BACKPROP && f.model_self == 0);
    c.node = MFU_NODE_CHECKPOINT;
    /* a custom Function's forward inside it (grad off): recompute */
    c.grad_enabled = 0;
    CHECK(count("aten::mm", &c, &f) == MFU_OK && f.site == MFU_SITE_RECOMPUTE &&
          f.model_self == 0 && f.model_backward == 0);
    /* the non-reentrant checkpoint's recompute (saved-tensor hooks set),
     * under any node: discarded, executed only */
    c.saved_tensor_hooks = 1;
    for (int node = MFU_NODE_BUILTIN; node <= MFU_NODE_CHECKPOINT; node++)
        for (int grad = 0; grad <= 1; grad++) {
            c.node = (mfu_op_node)node;
            c.grad_enabled = grad;
            CHECK(count("aten::mm", &c, &f) == MFU_OK && f.site == MFU_SITE_RECOMPUTE &&
                  f.model_self == 0 && f.model_backward == 0 && f.executed == 240);
        }
    c.node = (mfu_op_node)4;
    CHECK(count("aten::mm", &c, &f) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_op_custom_flops(10, -1, 1, &c, &f) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(strcmp(mfu_op_site_name(MFU_SITE_RECOMPUTE_BACKPROP), "recompute_backprop") == 0);
    CHECK(mfu_op_site_name((mfu_op_site)9) == NULL && mfu_op_site_of(NULL) == MFU_SITE_FORWARD);

    /* a custom formula follows the same sites, its declared backward
     * charged where the forward runs */
    mfu_op_call k = call_of(NULL, 0);
    CHECK(mfu_op_custom_flops(100, -1, 1, &k, &f) == MFU_OK && f.model_self == 300 &&
          f.model_backward == 0);
    k.backward_phase = 1;
    k.grad_enabled = 0;
    k.node = MFU_NODE_CUSTOM;
    CHECK(mfu_op_custom_flops(100, -1, 1, &k, &f) == MFU_OK && f.model_self == 100 &&
          f.model_backward == 0 && f.site == MFU_SITE_CUSTOM_BACKWARD);
    /* a reentrant recompute: its forward ran without grad, so the declared
     * backward is charged here */
    k.node = MFU_NODE_CHECKPOINT;
    k.grad_enabled = 1;
    CHECK(mfu_op_custom_flops(100, 50, 1, &k, &f) == MFU_OK && f.model_self == 50 &&
          f.model_backward == 0 && f.site == MFU_SITE_RECOMPUTE_BACKPROP);
}

int main(void)
{
    test_causal_half_on_every_path();
    test_sites();
    test_compute_dtype();
    test_table_rows_are_well_formed();
    test_matmul_and_the_backward_rule();
    test_convolution();
    test_convolution_backward();
    test_sdpa_and_causal();
    test_kernel_layout_and_mask_type();
    test_varlen();
    test_flash_attn_and_flex_rows();
    test_custom_and_bad_calls();
    return check_summary("test_ops");
}
