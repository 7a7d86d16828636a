/*
 * py_flops.c -- Python bindings of core/ops/flops.h.
 *
 * Op formulas return Python ints (exact; OverflowError when the count does
 * not fit int64). Every error names the argument. The analytic model count
 * (core/model/transformer.h) is py_transformer.c's.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mfu_module.h"
#include "py_ops.h"

/* ------------------------------------------------------------------------
 * Argument helpers (the conversions are py_args.h's)
 * ------------------------------------------------------------------------ */

static const mfu_py_choice causal_choices[] = {
    {"full", MFU_CAUSAL_FULL},
    {"half", MFU_CAUSAL_HALF},
    {NULL, 0},
};

/* Optional causal convention: NULL -> FULL. */
static int causal_arg(PyObject *obj, mfu_causal *out)
{
    int value = MFU_CAUSAL_FULL;
    if (obj != NULL && mfu_py_choice_arg(obj, "causal_attention", causal_choices,
                                         &value) < 0)
        return -1;
    *out = (mfu_causal)value;
    return 0;
}

static PyObject *flops_result(mfu_status st, const char *call, int64_t flops)
{
    if (st == MFU_OK)
        return PyLong_FromLongLong((long long)flops);
    if (st == MFU_ERR_OVERFLOW)
        return mfu_py_raise(st, call, "the FLOP count does not fit in int64");
    return mfu_py_raise(st, call, "dimensions must be non-negative and "
                                  "consistent");
}

/* ------------------------------------------------------------------------
 * Op formulas
 * ------------------------------------------------------------------------ */

typedef mfu_status (*mm3_fn)(int64_t, int64_t, int64_t, int64_t *);
typedef mfu_status (*mm4_fn)(int64_t, int64_t, int64_t, int64_t, int64_t *);

/* One GEMM formula called with (m, k, n) -- fn3 -- or, batched, with
 * (b, m, k, n) -- fn4; exactly one of them is given. */
static PyObject *call_mm(PyObject *args, PyObject *kwargs, const char *name,
                         mm3_fn fn3, mm4_fn fn4)
{
    static char *keywords3[] = {"m", "k", "n", NULL};
    static char *keywords4[] = {"b", "m", "k", "n", NULL};
    long long b = 1, m, k, n;
    int64_t flops = 0;
    char format[32];
    mfu_status st;
    int ok;

    PyOS_snprintf(format, sizeof format, "%s:%s", fn4 ? "LLLL" : "LLL", name);
    ok = fn4 ? PyArg_ParseTupleAndKeywords(args, kwargs, format, keywords4, &b, &m, &k, &n)
             : PyArg_ParseTupleAndKeywords(args, kwargs, format, keywords3, &m, &k, &n);
    if (!ok)
        return NULL;
    if (b < 0 || m < 0 || k < 0 || n < 0)
        return fn4 ? mfu_py_raise(MFU_ERR_INVALID_ARGUMENT, name,
                                  "dimensions must be non-negative (b=%lld, m=%lld, "
                                  "k=%lld, n=%lld)", b, m, k, n)
                   : mfu_py_raise(MFU_ERR_INVALID_ARGUMENT, name,
                                  "dimensions must be non-negative (m=%lld, k=%lld, "
                                  "n=%lld)", m, k, n);
    st = fn4 ? fn4(b, m, k, n, &flops) : fn3(m, k, n, &flops); /* before reading flops */
    return flops_result(st, name, flops);
}

/* The method for one GEMM formula: py_<name>(module, args, kwargs). */
#define MM_METHOD(name, fn3, fn4)                                                  \
    static PyObject *py_##name(PyObject *module, PyObject *args, PyObject *kwargs) \
    {                                                                              \
        (void)module;                                                              \
        return call_mm(args, kwargs, #name, fn3, fn4);                             \
    }

MM_METHOD(mm_flop, mfu_mm_flop, NULL)
MM_METHOD(addmm_flop, mfu_addmm_flop, NULL)
MM_METHOD(bmm_flop, NULL, mfu_bmm_flop)
MM_METHOD(baddbmm_flop, NULL, mfu_baddbmm_flop)

static PyObject *py_grouped_mm_flop(PyObject *module, PyObject *args,
                                    PyObject *kwargs)
{
    static char *keywords[] = {"a_shape", "b_shape", NULL};
    PyObject *a_obj, *b_obj;
    int64_t *a = NULL, *b = NULL;
    size_t a_ndim = 0, b_ndim = 0;
    int64_t flops = 0;
    PyObject *result = NULL;
    mfu_status st;

    (void)module;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO:grouped_mm_flop",
                                     keywords, &a_obj, &b_obj))
        return NULL;
    if (mfu_py_int64_array_arg(a_obj, "a_shape", &a, &a_ndim) < 0)
        goto error;
    if (mfu_py_int64_array_arg(b_obj, "b_shape", &b, &b_ndim) < 0)
        goto error;
    if (a_ndim < 2 || a_ndim > 3 || b_ndim < 2 || b_ndim > 3) {
        PyErr_Format(PyExc_ValueError,
                     "grouped_mm_flop: a_shape and b_shape have 2 or 3 dims, "
                     "got %zu and %zu", a_ndim, b_ndim);
        goto error;
    }
    st = mfu_grouped_mm_flop(a, a_ndim, b, b_ndim, &flops);
    result = flops_result(st, "grouped_mm_flop", flops);
error:
    PyMem_Free(a);
    PyMem_Free(b);
    return result;
}

/* The rank of a shape argument (its length) for the convolution calls. */
static int conv_rank(PyObject *obj, const char *argument, size_t *ndim)
{
    Py_ssize_t n = PyObject_Length(obj);
    if (n < 0) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s must be a sequence of ints, not %.80s",
                     argument, Py_TYPE(obj)->tp_name);
        return -1;
    }
    if (n < 3 || n > MFU_CONV_MAX_NDIM) {
        PyErr_Format(PyExc_ValueError,
                     "%s: a convolution shape has 3 to %d dims, got %zd",
                     argument, MFU_CONV_MAX_NDIM, n);
        return -1;
    }
    *ndim = (size_t)n;
    return 0;
}

static PyObject *py_convolution_flop(PyObject *module, PyObject *args,
                                     PyObject *kwargs)
{
    static char *keywords[] = {"x_shape", "w_shape", "out_shape", "transposed",
                               NULL};
    PyObject *x_obj, *w_obj, *out_obj;
    int transposed = 0;
    int64_t x[MFU_CONV_MAX_NDIM], w[MFU_CONV_MAX_NDIM], y[MFU_CONV_MAX_NDIM];
    int64_t flops = 0;
    size_t ndim;
    mfu_status st;

    (void)module;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO|p:convolution_flop",
                                     keywords, &x_obj, &w_obj, &out_obj,
                                     &transposed))
        return NULL;
    if (conv_rank(x_obj, "x_shape", &ndim) < 0 ||
        mfu_py_shape_arg(x_obj, "x_shape", ndim, x) < 0 ||
        mfu_py_shape_arg(w_obj, "w_shape", ndim, w) < 0 ||
        mfu_py_shape_arg(out_obj, "out_shape", ndim, y) < 0)
        return NULL;
    st = mfu_convolution_flop(x, w, y, ndim, transposed, &flops);
    return flops_result(st, "convolution_flop", flops);
}

static PyObject *py_convolution_backward_flop(PyObject *module, PyObject *args,
                                              PyObject *kwargs)
{
    static char *keywords[] = {"grad_out_shape", "x_shape", "w_shape",
                               "transposed", "groups", "input_grad",
                               "weight_grad", NULL};
    PyObject *g_obj, *x_obj, *w_obj;
    int transposed = 0, input_grad = 1, weight_grad = 1;
    long long groups = 1;
    int64_t g[MFU_CONV_MAX_NDIM], x[MFU_CONV_MAX_NDIM], w[MFU_CONV_MAX_NDIM];
    int64_t flops = 0;
    size_t ndim;
    mfu_status st;

    (void)module;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs,
                                     "OOO|pLpp:convolution_backward_flop",
                                     keywords, &g_obj, &x_obj, &w_obj,
                                     &transposed, &groups, &input_grad,
                                     &weight_grad))
        return NULL;
    if (conv_rank(x_obj, "x_shape", &ndim) < 0 ||
        mfu_py_shape_arg(g_obj, "grad_out_shape", ndim, g) < 0 ||
        mfu_py_shape_arg(x_obj, "x_shape", ndim, x) < 0 ||
        mfu_py_shape_arg(w_obj, "w_shape", ndim, w) < 0)
        return NULL;
    if (groups < 1 || x[1] % groups != 0 || g[1] % groups != 0)
        return mfu_py_raise(MFU_ERR_INVALID_ARGUMENT, "groups",
                            "must be >= 1 and divide both channel counts "
                            "(got %lld)", groups);
    st = mfu_convolution_backward_flop(g, x, w, ndim, transposed, groups,
                                       input_grad, weight_grad, &flops);
    return flops_result(st, "convolution_backward_flop", flops);
}

/* What an sdpa call computes: its forward, its backward, or (sdpa_model_flop,
 * which takes with_backward=) the model FLOPs of a forward and its backward. */
typedef enum { SDPA_FORWARD, SDPA_BACKWARD, SDPA_MODEL } sdpa_call;

/* Shared parsing of the sdpa calls. */
static PyObject *call_sdpa(PyObject *args, PyObject *kwargs, const char *name,
                           sdpa_call call)
{
    /* with_backward (the last entry) only where the format has its unit:
     * CPython refuses a keyword list longer than the format */
    static char *keywords[] = {"batch", "heads_q", "heads_kv", "seq_q",
                               "seq_kv", "head_dim_qk", "head_dim_v",
                               "causal_attention", "with_backward", NULL};
    static char *keywords_no_backward[] = {"batch", "heads_q", "heads_kv", "seq_q",
                                           "seq_kv", "head_dim_qk", "head_dim_v",
                                           "causal_attention", NULL};
    long long b, h, hkv, sq, skv, dqk, dv;
    PyObject *causal_obj = NULL;
    int with_backward = 0;
    mfu_attention_shape shape;
    mfu_causal causal;
    int64_t flops = 0;
    char format[48];
    mfu_status st;

    PyOS_snprintf(format, sizeof format, "LLLLLLL|$O%s:%s", call == SDPA_MODEL ? "p" : "",
                  name);
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, format,
                                     call == SDPA_MODEL ? keywords : keywords_no_backward,
                                     &b, &h, &hkv, &sq, &skv, &dqk, &dv, &causal_obj,
                                     &with_backward))
        return NULL;
    if (causal_arg(causal_obj, &causal) < 0)
        return NULL;
    if (h < 1 || hkv < 1 || h % hkv != 0)
        return mfu_py_raise(MFU_ERR_INVALID_ARGUMENT, "heads_kv",
                            "must be >= 1 and divide heads_q (heads_q=%lld, "
                            "heads_kv=%lld)", h, hkv);
    shape = (mfu_attention_shape){.batch = b, .heads_q = h, .heads_kv = hkv,
                                  .seq_q = sq, .seq_kv = skv,
                                  .head_dim_qk = dqk, .head_dim_v = dv};
    if (call == SDPA_MODEL)
        st = mfu_sdpa_model_flop(&shape, causal, with_backward, &flops);
    else if (call == SDPA_BACKWARD)
        st = mfu_sdpa_backward_flop(&shape, causal, &flops);
    else
        st = mfu_sdpa_flop(&shape, causal, &flops);
    return flops_result(st, name, flops);
}

static PyObject *py_sdpa_flop(PyObject *module, PyObject *args,
                              PyObject *kwargs)
{
    (void)module;
    return call_sdpa(args, kwargs, "sdpa_flop", SDPA_FORWARD);
}

static PyObject *py_sdpa_backward_flop(PyObject *module, PyObject *args,
                                       PyObject *kwargs)
{
    (void)module;
    return call_sdpa(args, kwargs, "sdpa_backward_flop", SDPA_BACKWARD);
}

static PyObject *py_sdpa_model_flop(PyObject *module, PyObject *args,
                                    PyObject *kwargs)
{
    (void)module;
    return call_sdpa(args, kwargs, "sdpa_model_flop", SDPA_MODEL);
}

static PyObject *py_varlen_attention_flop(PyObject *module, PyObject *args,
                                          PyObject *kwargs)
{
    static char *keywords[] = {"cu_seqlens_q", "cu_seqlens_k", "heads_q",
                               "heads_kv", "head_dim_qk", "head_dim_v",
                               "causal_attention", "backward", NULL};
    PyObject *q_obj, *k_obj, *causal_obj = NULL, *result = NULL;
    long long h, hkv, dqk, dv;
    int backward = 0;
    int64_t *cu_q = NULL, *cu_k = NULL, flops = 0;
    size_t nq = 0, nk = 0;
    mfu_causal causal;
    mfu_status st;

    (void)module;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs,
                                     "OOLLLL|$Op:varlen_attention_flop",
                                     keywords, &q_obj, &k_obj, &h, &hkv, &dqk,
                                     &dv, &causal_obj, &backward))
        return NULL;
    if (causal_arg(causal_obj, &causal) < 0)
        return NULL;
    if (mfu_py_int64_array_arg(q_obj, "cu_seqlens_q", &cu_q, &nq) < 0)
        goto error;
    if (k_obj != Py_None) {
        if (mfu_py_int64_array_arg(k_obj, "cu_seqlens_k", &cu_k, &nk) < 0)
            goto error;
        if (nk != nq) {
            mfu_py_raise(MFU_ERR_INVALID_ARGUMENT, "cu_seqlens_k",
                         "has %zu offsets, cu_seqlens_q has %zu", nk, nq);
            goto error;
        }
    }
    if (h < 1 || hkv < 1 || h % hkv != 0) {
        mfu_py_raise(MFU_ERR_INVALID_ARGUMENT, "heads_kv",
                     "must be >= 1 and divide heads_q (heads_q=%lld, "
                     "heads_kv=%lld)", h, hkv);
        goto error;
    }
    st = backward ? mfu_varlen_attention_backward_flop(cu_q, cu_k, nq, h, hkv,
                                                       dqk, dv, causal, &flops)
                  : mfu_varlen_attention_flop(cu_q, cu_k, nq, h, hkv, dqk, dv,
                                              causal, &flops);
    if (st == MFU_ERR_INVALID_ARGUMENT)
        mfu_py_raise(st, "cu_seqlens",
                     "offsets must be non-negative and non-decreasing, and "
                     "head dims non-negative");
    else
        result = flops_result(st, "varlen_attention_flop", flops);
error:
    PyMem_Free(cu_q);
    PyMem_Free(cu_k);
    return result;
}

/* ------------------------------------------------------------------------
 * Method table
 * ------------------------------------------------------------------------ */

static PyMethodDef flops_methods[] = {
    {"mm_flop", (PyCFunction)(void (*)(void))py_mm_flop,
     METH_VARARGS | METH_KEYWORDS,
     "mm_flop(m, k, n)\n--\n\n[m, k] @ [k, n]: 2*m*n*k FLOPs."},
    {"addmm_flop", (PyCFunction)(void (*)(void))py_addmm_flop,
     METH_VARARGS | METH_KEYWORDS,
     "addmm_flop(m, k, n)\n--\n\n= mm_flop; the bias add is not counted."},
    {"bmm_flop", (PyCFunction)(void (*)(void))py_bmm_flop,
     METH_VARARGS | METH_KEYWORDS,
     "bmm_flop(b, m, k, n)\n--\n\n[b, m, k] @ [b, k, n]: 2*b*m*n*k FLOPs."},
    {"baddbmm_flop", (PyCFunction)(void (*)(void))py_baddbmm_flop,
     METH_VARARGS | METH_KEYWORDS,
     "baddbmm_flop(b, m, k, n)\n--\n\n= bmm_flop."},
    {"grouped_mm_flop", (PyCFunction)(void (*)(void))py_grouped_mm_flop,
     METH_VARARGS | METH_KEYWORDS,
     "grouped_mm_flop(a_shape, b_shape)\n--\n\n"
     "aten._grouped_mm: every row of a meets one group's matrix, 2*M*K*N\n"
     "FLOPs (3D x 3D: 2*G*M*K*N); counted from the shapes."},
    {"convolution_flop", (PyCFunction)(void (*)(void))py_convolution_flop,
     METH_VARARGS | METH_KEYWORDS,
     "convolution_flop(x_shape, w_shape, out_shape, transposed=False)\n--\n\n"
     "2 * output elements * (c_in / groups) * prod(kernel) FLOPs (transposed:\n"
     "input points); FlopCounterMode's conv formula."},
    {"convolution_backward_flop",
     (PyCFunction)(void (*)(void))py_convolution_backward_flop,
     METH_VARARGS | METH_KEYWORDS,
     "convolution_backward_flop(grad_out_shape, x_shape, w_shape, "
     "transposed=False, groups=1, input_grad=True, weight_grad=True)\n--\n\n"
     "Each requested gradient costs the forward count. groups=1 reproduces\n"
     "FlopCounterMode, which ignores groups in the weight gradient."},
    {"sdpa_flop", (PyCFunction)(void (*)(void))py_sdpa_flop,
     METH_VARARGS | METH_KEYWORDS,
     "sdpa_flop(batch, heads_q, heads_kv, seq_q, seq_kv, head_dim_qk, "
     "head_dim_v, *, causal_attention='full')\n--\n\n"
     "Attention forward: 2*b*h*s_q*s_kv*(d_qk + d_v) FLOPs ('half': / 2)."},
    {"sdpa_backward_flop", (PyCFunction)(void (*)(void))py_sdpa_backward_flop,
     METH_VARARGS | METH_KEYWORDS,
     "sdpa_backward_flop(batch, heads_q, heads_kv, seq_q, seq_kv, "
     "head_dim_qk, head_dim_v, *, causal_attention='full')\n--\n\n"
     "Attention backward as executed (score recompute included):\n"
     "2*b*h*s_q*s_kv*(3*d_qk + 2*d_v) FLOPs; FlopCounterMode's formula."},
    {"sdpa_model_flop", (PyCFunction)(void (*)(void))py_sdpa_model_flop,
     METH_VARARGS | METH_KEYWORDS,
     "sdpa_model_flop(batch, heads_q, heads_kv, seq_q, seq_kv, head_dim_qk, "
     "head_dim_v, *, causal_attention='full', with_backward=False)\n--\n\n"
     "Attention model FLOPs: the forward, plus with_backward the model\n"
     "backward (MFU_ATTENTION_MODEL_BACKWARD = 2x the forward, PaLM)."},
    {"varlen_attention_flop",
     (PyCFunction)(void (*)(void))py_varlen_attention_flop,
     METH_VARARGS | METH_KEYWORDS,
     "varlen_attention_flop(cu_seqlens_q, cu_seqlens_k, heads_q, heads_kv, "
     "head_dim_qk, head_dim_v, *, causal_attention='full', backward=False)"
     "\n--\n\nAttention summed per sequence of cumulative lengths "
     "(cu_seqlens_k None: same as q)."},
    {NULL, NULL, 0, NULL},
};

int mfu_py_flops_exec(PyObject *module)
{
    return PyModule_AddFunctions(module, flops_methods);
}
