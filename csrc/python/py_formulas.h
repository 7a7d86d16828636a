/*
 * py_formulas.h -- the custom-formula registry of py_formulas.c, as
 * py_ops.c counts with it. Private to csrc/python (the C++ observer reaches
 * the registry through py_ops.h's capsule only).
 */
#ifndef MFU_PY_FORMULAS_H
#define MFU_PY_FORMULAS_H

#include "mfu_module.h"
#include "py_ops.h"

/* An op name argument as UTF-8 (borrowed from the str); NULL with a
 * TypeError naming `argument` when it is not a str. */
const char *mfu_py_op_name_arg(PyObject *obj, const char *argument);

/* *out = the live formula registered for `name` in `module`'s registry, or
 * NULL when none is; 0, or -1 with an exception when the registry cannot be
 * reached. */
int mfu_py_formula_lookup(PyObject *module, const char *name, const mfu_formula **out);

/* Call `formula` with `args` and count its answer (mfu_ops_api.formulas.count;
 * py_ops.h says how). 0, or -1 with an exception. */
int mfu_py_formula_count(const mfu_formula *formula, PyObject *args,
                         int any_input_requires_grad, const mfu_op_call *call,
                         mfu_op_flops *out);


#endif /* MFU_PY_FORMULAS_H */
