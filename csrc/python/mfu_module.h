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
#include "../core/base/mfu_limits.h"
#include "py_args.h"

/* Per-module state (multi-phase init: no C globals hold Python objects). */
typedef struct mfu_module_state {
    PyTypeObject *track_type; /* mfu_tracker._C.UtilizationResult */
    int warned_mfu_above_one; /* the "MFU > 1" warning is given once */
    PyTypeObject *timer_type; /* mfu_tracker._C.MarkTimer (py_mark_timer.c) */
    PyTypeObject *step_type;  /* mfu_tracker._C.StepTracker (py_step_tracker.c) */
    /* The record's fields (core/step_fields.h), interned (py_step_figures.c):
     * every field's name (the keys of the figures and records); the names of
     * the given ones (summary()'s totals, book()'s fields) and their field
     * indices; step()'s parameters -- num_tokens, flops_by_dtype, then the
     * other given fields -- and their field indices (-1: flops_by_dtype). */
    PyObject *field_names[MFU_FIELD_COUNT];
    PyObject *given_kwnames[MFU_FIELD_COUNT];
    int given_fields[MFU_FIELD_COUNT];
    int given_count;
    PyObject *step_kwnames[MFU_FIELD_COUNT + 1];
    int step_fields[MFU_FIELD_COUNT + 1];
    int step_count;
    PyObject *ratio_names[MFU_RATIO_COUNT]; /* core/stats.h's, interned */
    /* Tracker.phase()'s context type and the phase names, interned, in
     * mfu_phase order (py_phases.c). */
    PyTypeObject *phase_type;
    PyObject *phase_names[MFU_PHASE_COUNT];
    /* track() (py_track.c): the resolver that turns (dtype, device, spec,
     * peak_tflops, clock) into a peak and a clock, the last key it resolved
     * and its result, the interned keyword names and the defaults. */
    PyObject *track_resolver;
    PyObject *track_last_key[5];
    PyObject *track_last_resolved;
    PyObject *track_kwnames[12];
    int warned_track_mixed; /* track(flops_by_dtype=): a dtype without a peak */
    PyObject *str_auto;
    /* op_count()'s result: a struct sequence (py_ops.c) */
    PyTypeObject *op_flops_type;
    /* The communication sinks (py_comm.c): a plain C registry, never freed,
     * holding no reference. */
    void *comm_registry;
} mfu_module_state;

/* Every Python object the state holds, for module.c's traverse and clear:
 * X(field) for a single object, X_ARRAY(field) for an array of them. A new
 * field is added here once. */
#define MFU_MODULE_STATE_OBJECTS(X, X_ARRAY) \
    X(track_type)                            \
    X(timer_type)                            \
    X(step_type)                             \
    X_ARRAY(field_names)                     \
    X_ARRAY(given_kwnames)                   \
    X_ARRAY(step_kwnames)                    \
    X_ARRAY(ratio_names)                     \
    X(phase_type)                            \
    X_ARRAY(phase_names)                     \
    X(track_resolver)                        \
    X_ARRAY(track_last_key)                  \
    X(track_last_resolved)                   \
    X_ARRAY(track_kwnames)                   \
    X(str_auto)                              \
    X(op_flops_type)

/* The spec of a heap type of this module: mfu_tracker._C.<name> (a string
 * literal), whose instances are `object` structs. */
#define MFU_PY_TYPE_SPEC(type_name, object, type_flags, type_slots)              \
    {                                                                           \
        .name = "mfu_tracker._C." type_name, .basicsize = sizeof(object),       \
        .flags = (type_flags), .slots = (type_slots)                            \
    }

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

/* Py_tp_traverse of a heap type whose instances hold no Python object but
 * their type (the timer, the step tracker). */
int mfu_py_traverse_type(PyObject *self, visitproc visit, void *arg);

/* The end of such a type's dealloc, after it freed its own core object:
 * untrack, free `lock` (NULL: none), free the instance, release the type. */
void mfu_py_dealloc_locked(PyObject *self, PyThread_type_lock lock);

/* Convert an int/float argument (not bool) to double; None -> NaN when
 * `allow_none`. Returns -1 with TypeError naming `argument` otherwise. */
int mfu_py_number_arg(PyObject *obj, const char *argument, int allow_none,
                      double *out);

/* The module state reached from an instance of one of our types or of a
 * Python subclass of one (PyType_GetModuleByDef walks the MRO). */
mfu_module_state *mfu_module_state_from_type(PyTypeObject *type);

/* The module's definition (module.c), which the line above looks up. */
extern struct PyModuleDef mfu_module_def;

/* ---- GPU-timed blocks (py_mark_timer.c, used by py_track.c) ---------------
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

/* ---- what the clock types share (py_clock.c) ------------------------------ */

/* "cpu", "cuda", "hip" -> mfu_clock_kind, for mfu_py_choice_arg. */
extern const mfu_py_choice mfu_py_clock_choices[];
/* The clock's name: "cpu", "cuda" or "hip". */
const char *mfu_py_clock_name(mfu_clock_kind clock);
/* The `clock` argument (mfu_py_choice_arg over mfu_py_clock_choices). */
int mfu_py_clock_arg(PyObject *obj, mfu_clock_kind *out);

/* A new instance of `type` (tp_alloc) with a new lock stored at
 * `lock_offset` (offsetof the object's PyThread_type_lock); NULL with the
 * exception set. The type's dealloc frees the lock. */
PyObject *mfu_py_alloc_locked(PyTypeObject *type, size_t lock_offset);

/* Take a per-object lock; if another thread holds it (waiting on the GPU
 * with the GIL released), wait for it without holding the GIL. */
void mfu_py_lock_acquire(PyThread_type_lock lock);

/* Emit a RuntimeWarning without disturbing a pending exception (an
 * __exit__ runs with the block's exception set). A warning turned into an
 * error is swallowed: it must not end a training run. */
void mfu_py_warn_keep_exception(const char *message);

/* "cuEventRecord failed with 1 (CUDA_ERROR_INVALID_VALUE)" or
 * "dlopen: <detail>": a driver failure of `clock`, for a message. */
void mfu_py_describe_gpu_error(mfu_clock_kind clock, const mfu_gpu_error *error,
                               char *buffer, size_t size);

/* The one warning a failed GPU clock gives: "mfu_tracker: <what>: the cuda
 * clock failed (<cause>); timing falls back to the CPU clock". */
void mfu_py_fallback_message(mfu_clock_kind clock, const char *what,
                             const mfu_gpu_error *error, char *buffer, size_t size);

/* A timer's counters as a dict: marks, resolved, waits, pool_full_waits,
 * events, pool_grows. */
PyObject *mfu_py_timer_counters_dict(const mfu_timer_counters *counters);

/* Topic exec functions: each adds its own file's functions, types and
 * state to the module; 0 / -1. module.c calls every one, in its table
 * (topic_execs); none calls another. */
int mfu_py_track_exec(PyObject *module);           /* py_track.c: track() */
int mfu_py_metrics_exec(PyObject *module);         /* py_metrics.c: new_track(), compute_metrics() */
int mfu_py_gpu_specs_exec(PyObject *module);       /* py_gpu_specs.c */
int mfu_py_flops_exec(PyObject *module);           /* py_flops.c: the op formulas */
int mfu_py_transformer_exec(PyObject *module);     /* py_transformer.c */
int mfu_py_families_exec(PyObject *module);        /* py_families.c */
int mfu_py_context_parallel_exec(PyObject *module); /* py_context_parallel.c */
int mfu_py_generation_exec(PyObject *module);      /* py_generation.c */
int mfu_py_conventions_exec(PyObject *module);     /* py_conventions.c */
int mfu_py_ops_exec(PyObject *module);             /* py_ops.c: op_count(), OpFlops */
int mfu_py_formulas_exec(PyObject *module);        /* py_formulas.c: custom formulas, _ops_api */
int mfu_py_mark_timer_exec(PyObject *module);      /* py_mark_timer.c */
int mfu_py_step_tracker_exec(PyObject *module);    /* py_step_tracker.c: StepTracker */
int mfu_py_work_fields_exec(PyObject *module);     /* py_step_figures.c: work-field names */
int mfu_py_phases_exec(PyObject *module);          /* py_phases.c: phase() */
int mfu_py_nvml_exec(PyObject *module);            /* py_nvml.c */
int mfu_py_comm_exec(PyObject *module);            /* py_comm.c: the registry, _comm_api */
int mfu_py_links_exec(PyObject *module);           /* py_links.c */
int mfu_py_kernels_exec(PyObject *module);         /* py_kernels.c */
int mfu_py_nodes_exec(PyObject *module);           /* py_nodes.c */
int mfu_py_record_exec(PyObject *module);        /* py_record.c: STEP_FIELDS, RATIOS, form_figures */

#endif /* MFU_MODULE_H */
