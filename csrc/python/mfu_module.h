/*
 * mfu_module.h -- shared declarations of the CPython extension mfu_tracker._C.
 *
 * module.c holds only the module definition and its init; each topic lives in
 * its own py_<topic>.c, which exposes one exec function adding its functions
 * and types to the module. Every file of the extension includes this header.
 *
 * Errors cross from C in one call: mfu_py_raise() maps an mfu_status to an
 * exception whose message names the bad argument, and returns NULL.
 */
#ifndef MFU_MODULE_H
#define MFU_MODULE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "../core/mfu_core.h"
#include "../core/mfu_limits.h"
#include "py_args.h"

/* Per-module state (multi-phase init: no C globals hold Python objects). */
typedef struct mfu_module_state {
    PyTypeObject *track_type; /* mfu_tracker._C.UtilizationResult */
    int warned_mfu_above_one; /* the "MFU > 1" warning is given once */
    PyTypeObject *timer_type; /* mfu_tracker._C.MarkTimer (py_timer.c) */
    PyTypeObject *step_type;  /* mfu_tracker._C.StepTracker (py_timer.c) */
    PyObject *kw_num_tokens;     /* interned keyword names of StepTracker.step */
    PyObject *kw_model_flops;
    PyObject *kw_executed_flops;
    /* track() (py_track.c): the resolver that turns (dtype, device, spec,
     * peak_tflops, clock) into a peak and a clock, the last key it resolved
     * and its result, the interned keyword names and the defaults. */
    PyObject *track_resolver;
    PyObject *track_last_key[5];
    PyObject *track_last_resolved;
    PyObject *track_kwnames[11];
    PyObject *str_fp16;
    PyObject *str_auto;
} mfu_module_state;

/* The state of `module` (never NULL for a module created by our init). */
mfu_module_state *mfu_module_get_state(PyObject *module);

/* Set an exception for `status` about `argument` with an optional detail
 * (printf-style, may be NULL) and return NULL:
 *   MFU_ERR_INVALID_ARGUMENT -> ValueError("argument: detail")
 *   MFU_ERR_OVERFLOW         -> OverflowError
 *   MFU_ERR_NOT_FOUND        -> LookupError
 *   MFU_ERR_NO_MEMORY        -> MemoryError
 *   anything else            -> RuntimeError */
PyObject *mfu_py_raise(mfu_status status, const char *argument,
                       const char *detail_format, ...)
#if defined(__GNUC__)
    /* The detail is formatted by PyOS_vsnprintf (C printf): let the compiler
     * reject Python-only conversions such as %R or %U. */
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* A Python float, or None for NaN ("unavailable" in the core). */
PyObject *mfu_py_float_or_none(double value);

/* Convert an int/float argument (not bool) to double; None -> NaN when
 * `allow_none`. Returns -1 with TypeError naming `argument` otherwise. */
int mfu_py_number_arg(PyObject *obj, const char *argument, int allow_none,
                      double *out);

/* The module state reached from an instance of one of our types or of a
 * Python subclass of one (PyType_GetModuleByDef walks the MRO). */
mfu_module_state *mfu_module_state_from_type(PyTypeObject *type);

/* ---- GPU-timed blocks (py_timer.c, used by py_track.c) --------------------
 *
 * A track() block on a GPU clock takes two marks on a shared MarkTimer.
 * While its result is alive and unresolved, its mfu_py_block is linked into
 * the timer's list of pending blocks (no reference is held: the block
 * unlinks itself on dealloc). Every operation on the timer that can resolve
 * marks (a new block's mark, a poll, a read) then sweeps that list and
 * caches each block's GPU time the first time it is seen resolved, so a
 * result read long after its marks left the timer's history still has its
 * value. On a driver failure the timer warns once and every pending block
 * falls back to the CPU clock readings it took itself. */
typedef enum mfu_block_state {
    MFU_BLOCK_CPU = 0,     /* timed by the CPU clock (no GPU clock, or fallback) */
    MFU_BLOCK_PENDING = 1, /* GPU marks taken, elapsed_s not known yet */
    MFU_BLOCK_RESOLVED = 2 /* elapsed_s holds the GPU time */
} mfu_block_state;

typedef struct mfu_py_block {
    struct mfu_py_block *prev, *next; /* the timer's pending list */
    int linked;
    int ended;          /* the end mark was taken */
    mfu_block_state state;
    uint64_t start_id, end_id;
    double start_s;     /* time of the start mark once seen; NaN before */
    double elapsed_s;   /* GPU seconds once resolved */
} mfu_py_block;

/* The clock's name: "cpu", "cuda" or "hip". */
const char *mfu_py_clock_name(mfu_clock_kind clock);
/* The clock a MarkTimer reads. */
mfu_clock_kind mfu_py_timer_clock(PyObject *timer);

/* 1 if `obj` is a MarkTimer. */
int mfu_py_timer_check(mfu_module_state *state, PyObject *obj);
/* Take the start mark; on failure the block is left MFU_BLOCK_CPU (with
 * one warning per timer). Never raises; keeps a set exception intact. */
void mfu_py_block_start(PyObject *timer, uintptr_t stream, mfu_py_block *block);
/* Take the end mark (no wait). Same failure rule. */
void mfu_py_block_end(PyObject *timer, uintptr_t stream, mfu_py_block *block);
/* Try to resolve the block without blocking; with `wait`, block (GIL
 * released) until the GPU reached it: at most one wait. Same failure rule. */
void mfu_py_block_resolve(PyObject *timer, mfu_py_block *block, int wait);
/* Unlink a block that is going away. */
void mfu_py_block_forget(PyObject *timer, mfu_py_block *block);

/* Topic exec functions: add functions and types to the module; 0 / -1. */
int mfu_py_track_exec(PyObject *module);
int mfu_py_gpu_specs_exec(PyObject *module);
int mfu_py_flops_exec(PyObject *module);
int mfu_py_timer_exec(PyObject *module);

#endif /* MFU_MODULE_H */
