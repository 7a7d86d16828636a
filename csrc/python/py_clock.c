/*
 * py_clock.c -- what the two clock types of _C share (py_mark_timer.c,
 * py_step_tracker.c): the clock names, the per-object lock taken without
 * holding the GIL, the one warning a failed GPU clock gives, and the timer
 * counters as a dict.
 */
#include <string.h>

#include "mfu_module.h"

const mfu_py_choice mfu_py_clock_choices[] = {
    {"cpu", MFU_CLOCK_CPU},
    {"cuda", MFU_CLOCK_CUDA},
    {"hip", MFU_CLOCK_HIP},
    {NULL, 0},
};

const char *mfu_py_clock_name(mfu_clock_kind clock)
{
    return mfu_py_choice_name(mfu_py_clock_choices, (int)clock);
}

int mfu_py_clock_arg(PyObject *obj, mfu_clock_kind *out)
{
    int value;
    if (mfu_py_choice_arg(obj, "clock", mfu_py_clock_choices, &value) < 0)
        return -1;
    *out = (mfu_clock_kind)value;
    return 0;
}

PyObject *mfu_py_alloc_locked(PyTypeObject *type, size_t lock_offset)
{
    PyObject *self = type->tp_alloc(type, 0);
    PyThread_type_lock lock;
    if (self == NULL)
        return NULL;
    lock = PyThread_allocate_lock();
    if (lock == NULL) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    memcpy((char *)self + lock_offset, &lock, sizeof lock);
    return self;
}

void mfu_py_lock_acquire(PyThread_type_lock lock)
{
    if (!PyThread_acquire_lock(lock, NOWAIT_LOCK)) {
        Py_BEGIN_ALLOW_THREADS
        PyThread_acquire_lock(lock, WAIT_LOCK);
        Py_END_ALLOW_THREADS
    }
}

void mfu_py_warn_keep_exception(const char *message)
{
    PyObject *exc_type, *exc_value, *exc_tb;
    PyErr_Fetch(&exc_type, &exc_value, &exc_tb);
    if (PyErr_WarnEx(PyExc_RuntimeWarning, message, 1) < 0)
        PyErr_Clear();
    PyErr_Restore(exc_type, exc_value, exc_tb);
}

void mfu_py_describe_gpu_error(mfu_clock_kind clock, const mfu_gpu_error *error,
                               char *buffer, size_t size)
{
    const char *call = error->call != NULL ? error->call : "a driver call";
    if (error->code != 0) {
        const mfu_gpu_driver *driver = NULL;
        const char *name = NULL;
        if (mfu_gpu_driver_get((mfu_gpu_api)clock, &driver) == MFU_OK)
            name = mfu_gpu_driver_code_name(driver, error->code);
        PyOS_snprintf(buffer, size, "%s failed with %d%s%s%s", call, error->code,
                      name ? " (" : "", name ? name : "", name ? ")" : "");
    } else if (error->detail[0] != '\0') {
        PyOS_snprintf(buffer, size, "%s: %s", call, error->detail);
    } else {
        PyOS_snprintf(buffer, size, "%s failed", call);
    }
}

void mfu_py_fallback_message(mfu_clock_kind clock, const char *what,
                             const mfu_gpu_error *error, char *buffer, size_t size)
{
    char cause[256];
    mfu_py_describe_gpu_error(clock, error, cause, sizeof cause);
    PyOS_snprintf(buffer, size,
                  "mfu_tracker: %s: the %s clock failed (%s); timing falls back "
                  "to the CPU clock",
                  what, mfu_py_clock_name(clock), cause);
}

PyObject *mfu_py_timer_counters_dict(const mfu_timer_counters *c)
{
    return Py_BuildValue("{sKsKsKsKsIsI}", "marks", (unsigned long long)c->marks,
                         "resolved", (unsigned long long)c->resolved, "waits",
                         (unsigned long long)c->waits, "pool_full_waits",
                         (unsigned long long)c->pool_full_waits, "events",
                         (unsigned int)c->events, "pool_grows",
                         (unsigned int)c->pool_grows);
}
