/*
 * py_families.c -- Python bindings of the family table's names
 * (core/model/families.h) and the bare 6N rule (mfu_params_flops): the two
 * transformer entry points that need none of py_transformer.c's field
 * tables.
 */
#include "py_transformer.h"

static PyObject *py_transformer_families(PyObject *module, PyObject *unused)
{
    const size_t n = mfu_family_count();
    PyObject *names = PyTuple_New((Py_ssize_t)n);

    (void)module;
    (void)unused;
    if (names == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        PyObject *s = PyUnicode_FromString(mfu_family_at(i)->model_type);
        if (s == NULL) {
            Py_DECREF(names);
            return NULL;
        }
        PyTuple_SET_ITEM(names, (Py_ssize_t)i, s);
    }
    return names;
}

static PyObject *py_params_flops(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"num_params", "num_tokens", "lora", NULL};
    PyObject *n_obj, *t_obj;
    double n, t, model = 0.0, forward = 0.0;
    int lora = 0;

    (void)module;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|$p:params_flops", keywords,
                                     &n_obj, &t_obj, &lora))
        return NULL;
    if (mfu_py_real_arg(n_obj, "num_params", MFU_ARG_ABOVE_LOW, 0.0, &n) < 0 ||
        mfu_py_real_arg(t_obj, "num_tokens", 0, 0.0, &t) < 0)
        return NULL;
    if (mfu_params_flops(n, t, lora, &model, &forward) != MFU_OK)
        return mfu_py_raise(MFU_ERR_INVALID_ARGUMENT, "num_params", "invalid");
    return Py_BuildValue("{s:d,s:d}", "model_flops", model, "forward_flops", forward);
}

static PyMethodDef families_methods[] = {
    {"transformer_families", (PyCFunction)py_transformer_families, METH_NOARGS,
     "transformer_families()\n--\n\nThe model_type of every family row."},
    {"params_flops", (PyCFunction)(void (*)(void))py_params_flops,
     METH_VARARGS | METH_KEYWORDS,
     "params_flops(num_params, num_tokens, *, lora=False)\n--\n\n"
     "The 6N rule: {model_flops: 6*N*T (4*N*T with lora), forward_flops: 2*N*T}."},
    {NULL, NULL, 0, NULL},
};

int mfu_py_families_exec(PyObject *module)
{
    return PyModule_AddFunctions(module, families_methods);
}
