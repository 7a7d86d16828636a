/*
 * py_args.h -- the one argument vocabulary of mfu_tracker._C.
 *
 * Every binding converts its Python arguments with these helpers, so a bad
 * value gets the same kind of error everywhere, naming the argument:
 *   TypeError   the value has the wrong type (bool is never an int here:
 *               True as a FLOP count is a bug, not a 1)
 *   ValueError  the value is out of its range, or not one of the choices
 * Each returns 0 on success and -1 with the exception set. Outputs are
 * written only on success.
 *
 * Bounds come from core/base/mfu_limits.h; nothing here invents a limit.
 */
#ifndef MFU_PY_ARGS_H
#define MFU_PY_ARGS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stddef.h>
#include <stdint.h>

/* An int in [low, high] into *out. */
int mfu_py_int_arg(PyObject *obj, const char *argument, long long low,
                   long long high, long long *out);

/* Any int that fits int64 (OverflowError otherwise), into *out. */
int mfu_py_int64_arg(PyObject *obj, const char *argument, int64_t *out);

/* Flags of mfu_py_real_arg. */
enum {
    MFU_ARG_NONE_OK = 1u << 0,       /* None is accepted and gives NaN */
    MFU_ARG_ABOVE_LOW = 1u << 1,     /* the value must be > low, not >= low */
    MFU_ARG_ANY_FINITE = 1u << 2     /* no lower bound: any finite value */
};

/* A real number (int or float, not bool), finite and >= low (> low with
 * MFU_ARG_ABOVE_LOW), into *out. NaN is always rejected: None, where
 * allowed, is how a caller says "unknown". */
int mfu_py_real_arg(PyObject *obj, const char *argument, unsigned flags,
                    double low, double *out);

/* A bool (or the ints 0 / 1) into *out (0 or 1). */
int mfu_py_flag_arg(PyObject *obj, const char *argument, int *out);

/* A str with no NUL character into *out: its UTF-8, borrowed from `obj`
 * (valid while `obj` lives). An embedded NUL is a ValueError: C would
 * silently cut the text there. */
int mfu_py_str_arg(PyObject *obj, const char *argument, const char **out);

/* A named choice: a table of {name, value} ended by a NULL name. */
typedef struct mfu_py_choice {
    const char *name;
    int value;
} mfu_py_choice;

/* A str among `choices` into *out; the ValueError lists the valid names. */
int mfu_py_choice_arg(PyObject *obj, const char *argument,
                      const mfu_py_choice *choices, int *out);

/* The name of `value` in `choices` ("?" when absent). */
const char *mfu_py_choice_name(const mfu_py_choice *choices, int value);

/* A sequence of ints (each fitting int64) into a new PyMem array; *count
 * receives its length. Free with PyMem_Free. */
int mfu_py_int64_array_arg(PyObject *obj, const char *argument, int64_t **out,
                           size_t *count);

/* A sequence of exactly `ndim` ints into out[0 .. ndim-1]. */
int mfu_py_shape_arg(PyObject *obj, const char *argument, size_t ndim,
                     int64_t *out);

/* A raw stream handle: an int in [0, 2**64). */
int mfu_py_stream_arg(PyObject *obj, const char *argument, uintptr_t *out);

/* A dict {dtype name: FLOPs} (mixed precision, core/steps/mixed.h) into
 * out[0 .. MFU_DTYPE_COUNT-1], indexed by mfu_dtype, absent dtypes 0. Keys
 * are canonical dtype names (core/base/dtypes.h: "fp8", "bf16", "fp16", "tf32",
 * "fp32", "fp64", ...); values finite numbers >= 0. TypeError: not a dict,
 * a key not a str, a value not a number; ValueError: an unknown dtype name
 * (named, with the valid ones), a negative or non-finite value (named as
 * argument['bf16']). */
int mfu_py_dtype_flops_arg(PyObject *obj, const char *argument, double *out);

/*
 * Fast-call argument binding: the vectorcall convention's (args, nargs,
 * kwnames) matched to parameters by name, for the hot paths that cannot
 * afford a tuple and a dict per call.
 *
 * `names` holds the n parameter names (interned str; identity is tried
 * before equality), the first `max_positional` of which may be passed by
 * position. out[i] receives a borrowed reference to parameter i's value, or
 * is left untouched when it was not passed (preset it to the default or to
 * NULL). Parameters below `required` must be passed. TypeErrors say
 * `function`, as CPython's own do: unexpected keyword, multiple values,
 * too many positional arguments, missing argument.
 */
int mfu_py_bind(const char *function, PyObject *const *names, Py_ssize_t n,
                Py_ssize_t max_positional, Py_ssize_t required,
                PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                PyObject **out);

#endif /* MFU_PY_ARGS_H */
