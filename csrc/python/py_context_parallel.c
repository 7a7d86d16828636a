/*
 * py_context_parallel.c -- Python binding of core/model/context_parallel.h: one
 * rank's analytic FLOPs under context parallelism.
 */
#include <string.h>

#include "../core/model/context_parallel.h"
#include "py_transformer.h"

static const mfu_py_choice cp_modes[] = {
    {"ulysses", MFU_CP_ULYSSES}, {"ring", MFU_CP_RING}, {NULL, 0}};

static const char *cp_rule(const char *field)
{
    if (strcmp(field, "context_parallel") == 0)
        return "the degree must be >= 1 and divide every sequence length; ring attention "
               "takes no sliding or chunked windows, linear-attention / SSM or MTP layers";
    if (strcmp(field, "cp_rank") == 0)
        return "must be between 0 and context_parallel - 1";
    return mfu_py_transformer_field_rule(field);
}

static PyObject *py_context_parallel_flops(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"dims", "options", "degree", "rank", "mode", "seq_lens",
                               "batch_size", "seq_len", NULL};
    PyObject *dims_obj, *options_obj, *degree_obj, *rank_obj, *mode_obj;
    PyObject *lens_obj = Py_None, *batch_obj = Py_None, *seq_len_obj = Py_None;
    PyObject *result = NULL;
    mfu_transformer_options options;
    mfu_context_parallel cp;
    mfu_py_count_inputs in;
    mfu_transformer_flops out;
    long long degree, rank;
    int mode;
    const char *bad_field = NULL;
    mfu_status st;

    (void)module;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOO|$OOO:context_parallel_flops",
                                     keywords, &dims_obj, &options_obj, &degree_obj,
                                     &rank_obj, &mode_obj, &lens_obj, &batch_obj,
                                     &seq_len_obj) ||
        mfu_py_int_arg(degree_obj, "context_parallel", 1, INT64_MAX, &degree) < 0 ||
        mfu_py_int_arg(rank_obj, "cp_rank", 0, INT64_MAX, &rank) < 0 ||
        mfu_py_choice_arg(mode_obj, "cp_mode", cp_modes, &mode) < 0 ||
        mfu_py_transformer_options_parse(options_obj, &options) < 0 ||
        mfu_py_count_inputs_parse(dims_obj, lens_obj, batch_obj, seq_len_obj, Py_None,
                                  Py_None, &in) < 0)
        return NULL;
    cp = (mfu_context_parallel){.degree = (int64_t)degree, .rank = (int64_t)rank,
                                .mode = (mfu_cp_mode)mode};
    st = mfu_context_parallel_flops(&in.dims, &options, &in.batch, &cp, &out, &bad_field);
    if (st != MFU_OK)
        mfu_py_raise(st, bad_field != NULL ? bad_field : "dims", "%s",
                     bad_field != NULL ? cp_rule(bad_field) : "invalid");
    else
        result = mfu_py_transformer_result(&out);
    mfu_py_count_inputs_free(&in);
    return result;
}

static PyMethodDef cp_methods[] = {
    {"context_parallel_flops", (PyCFunction)(void (*)(void))py_context_parallel_flops,
     METH_VARARGS | METH_KEYWORDS,
     "context_parallel_flops(dims, options, degree, rank, mode, *, seq_lens=None, "
     "batch_size=None, seq_len=None)\n--\n\n"
     "One rank's share of the batch under context parallelism (mode 'ulysses' or\n"
     "'ring'; core/model/context_parallel.h), as transformer_flops() returns it."},
    {NULL, NULL, 0, NULL},
};

int mfu_py_context_parallel_exec(PyObject *module)
{
    return PyModule_AddFunctions(module, cp_methods);
}
