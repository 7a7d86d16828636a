/*
 * py_helpers.c -- what every py_<topic>.c calls (declared in mfu_module.h):
 * the module state, an mfu_status raised as the Python exception naming the
 * argument, a double as a float or None, the heap types' traverse and
 * dealloc.
 */
#include <math.h>
#include <stdarg.h>

#include "mfu_module.h"

mfu_module_state *mfu_module_get_state(PyObject *module)
{
    return (mfu_module_state *)PyModule_GetState(module);
}

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

int mfu_py_traverse_type(PyObject *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self)); /* a heap type's instances hold a reference to it */
    return 0;
}

void mfu_py_dealloc_locked(PyObject *self, PyThread_type_lock lock)
{
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    if (lock != NULL)
        PyThread_free_lock(lock);
    type->tp_free(self);
    Py_DECREF(type);
}
