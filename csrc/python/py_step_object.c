/*
 * py_step_object.c -- the _C.StepTracker object's lock and its queued
 * warnings (py_step_object.h), shared by the step methods
 * (py_step_tracker.c) and the phase methods (py_phases.c).
 */
#include "py_step_object.h"

void mfu_py_step_queue_warning(step_object *s, int *flag, const char *message)
{
    if (*flag || s->warn_pending)
        return;
    *flag = 1;
    s->warn_pending = 1;
    PyOS_snprintf(s->message, sizeof s->message, "%s", message);
}

void mfu_py_step_check_fallback(step_object *s)
{
    mfu_clock_kind clock;
    mfu_gpu_error error;
    char message[400];
    if (s->warned_failure || mfu_steps_fallback(s->steps, &clock, &error) == 0)
        return;
    mfu_py_fallback_message(clock, "Tracker", &error, message, sizeof message);
    mfu_py_step_queue_warning(s, &s->warned_failure, message);
}

void mfu_py_step_unlock(step_object *s)
{
    int warn = s->warn_pending;
    s->warn_pending = 0;
    PyThread_release_lock(s->lock);
    if (warn)
        mfu_py_warn_keep_exception(s->message);
}

int mfu_py_step_require_init(const step_object *s)
{
    if (s->steps != NULL)
        return 0;
    PyErr_SetString(PyExc_RuntimeError, "StepTracker.__init__ was not called");
    return -1;
}
