/*
 * module.c -- definition and multi-phase init of mfu_tracker._C.
 * The work lives in the py_<topic>.c files; this file only wires them in.
 */
#include <math.h>
#include <stdarg.h>

#include "mfu_module.h"

#ifndef MFU_TRACKER_VERSION
#error "setup.py defines MFU_TRACKER_VERSION (the package version)"
#endif

mfu_module_state *mfu_module_get_state(PyObject *module)
{
    return (mfu_module_state *)PyModule_GetState(module);
}

static struct PyModuleDef mfu_module_def;

mfu_module_state *mfu_module_state_from_type(PyTypeObject *type)
{
    PyObject *module = PyType_GetModuleByDef(type, &mfu_module_def);
    if (module == NULL)
        return NULL;
    return mfu_module_get_state(module);
}

PyObject *mfu_py_raise(mfu_status status, const char *argument,
                       const char *detail_format, ...)
{
    PyObject *exc_type;
    char detail[512] = "";

    switch (status) {
    case MFU_ERR_INVALID_ARGUMENT: exc_type = PyExc_ValueError; break;
    case MFU_ERR_OVERFLOW: exc_type = PyExc_OverflowError; break;
    case MFU_ERR_NOT_FOUND: exc_type = PyExc_LookupError; break;
    case MFU_ERR_NO_MEMORY: return PyErr_NoMemory();
    default: exc_type = PyExc_RuntimeError; break;
    }
    if (detail_format != NULL) {
        va_list ap;
        va_start(ap, detail_format);
        PyOS_vsnprintf(detail, sizeof detail, detail_format, ap);
        va_end(ap);
    }
    if (detail[0] != '\0')
        PyErr_Format(exc_type, "%s: %s", argument, detail);
    else
        PyErr_Format(exc_type, "%s: %s", argument, mfu_status_str(status));
    return NULL;
}

PyObject *mfu_py_float_or_none(double value)
{
    if (isnan(value))
        Py_RETURN_NONE;
    return PyFloat_FromDouble(value);
}

int mfu_py_number_arg(PyObject *obj, const char *argument, int allow_none,
                      double *out)
{
    if (obj == Py_None && allow_none) {
        *out = NAN;
        return 0;
    }
    /* bool is an int subclass; True as a FLOP count is a bug, not a 1. */
    if (PyBool_Check(obj) || !(PyLong_Check(obj) || PyFloat_Check(obj))) {
        PyErr_Format(PyExc_TypeError, "%s must be a number%s, not %.80s",
                     argument, allow_none ? " or None" : "",
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    *out = PyFloat_AsDouble(obj);
    if (*out == -1.0 && PyErr_Occurred())
        return -1; /* an int too large for a double */
    /* NaN is the core's "unknown"; from a caller it is a bad value (None
     * says unknown), so it must not slip through as "not given". */
    if (isnan(*out)) {
        mfu_py_raise(MFU_ERR_INVALID_ARGUMENT, argument,
                     "must be a finite number, got nan");
        return -1;
    }
    return 0;
}

static int mfu_module_exec(PyObject *module)
{
    if (PyModule_AddStringConstant(module, "__version__", MFU_TRACKER_VERSION) < 0)
        return -1;
    if (mfu_py_track_exec(module) < 0)
        return -1;
    if (mfu_py_gpu_specs_exec(module) < 0)
        return -1;
    if (mfu_py_flops_exec(module) < 0)
        return -1;
    if (mfu_py_timer_exec(module) < 0)
        return -1;
    return 0;
}

static int mfu_module_traverse(PyObject *module, visitproc visit, void *arg)
{
    mfu_module_state *state = mfu_module_get_state(module);
    Py_VISIT(state->track_type);
    Py_VISIT(state->timer_type);
    Py_VISIT(state->step_type);
    Py_VISIT(state->kw_num_tokens);
    Py_VISIT(state->kw_model_flops);
    Py_VISIT(state->kw_executed_flops);
    Py_VISIT(state->track_resolver);
    for (int i = 0; i < 5; i++)
        Py_VISIT(state->track_last_key[i]);
    Py_VISIT(state->track_last_resolved);
    for (int i = 0; i < 11; i++)
        Py_VISIT(state->track_kwnames[i]);
    Py_VISIT(state->str_fp16);
    Py_VISIT(state->str_auto);
    return 0;
}

static int mfu_module_clear(PyObject *module)
{
    mfu_module_state *state = mfu_module_get_state(module);
    Py_CLEAR(state->track_type);
    Py_CLEAR(state->timer_type);
    Py_CLEAR(state->step_type);
    Py_CLEAR(state->kw_num_tokens);
    Py_CLEAR(state->kw_model_flops);
    Py_CLEAR(state->kw_executed_flops);
    Py_CLEAR(state->track_resolver);
    for (int i = 0; i < 5; i++)
        Py_CLEAR(state->track_last_key[i]);
    Py_CLEAR(state->track_last_resolved);
    for (int i = 0; i < 11; i++)
        Py_CLEAR(state->track_kwnames[i]);
    Py_CLEAR(state->str_fp16);
    Py_CLEAR(state->str_auto);
    return 0;
}

static void mfu_module_free(void *module)
{
    (void)mfu_module_clear((PyObject *)module);
}

static PyModuleDef_Slot mfu_module_slots[] = {
    {Py_mod_exec, (void *)mfu_module_exec},
#ifdef Py_mod_multiple_interpreters
    {Py_mod_multiple_interpreters, Py_MOD_PER_INTERPRETER_GIL_SUPPORTED},
#endif
#ifdef Py_mod_gil
    {Py_mod_gil, Py_MOD_GIL_NOT_USED},
#endif
    {0, NULL},
};

static struct PyModuleDef mfu_module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "mfu_tracker._C",
    .m_doc = "C core of mfu_tracker: peak table, FLOP formulas, clocks, "
             "utilization arithmetic.",
    .m_size = sizeof(mfu_module_state),
    .m_slots = mfu_module_slots,
    .m_traverse = mfu_module_traverse,
    .m_clear = mfu_module_clear,
    .m_free = mfu_module_free,
};

PyMODINIT_FUNC PyInit__C(void)
{
    return PyModuleDef_Init(&mfu_module_def);
}
