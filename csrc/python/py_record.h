/*
 * py_record.h -- the record of a step's sums and its one formula, for
 * Python (py_record.c): _C.STEP_FIELDS (core/step_fields.h), _C.LOSSES,
 * _C.form_figures() (core/stats.h's mfu_figures_form, for the cross-rank
 * combination) and _C.closing_share(); and what the step tracker's files
 * share of them.
 */
#ifndef MFU_PY_RECORD_H
#define MFU_PY_RECORD_H

#include "mfu_module.h"

/* Every ratio of `m` into `dict` by name (None = unavailable) and, with a
 * `waterfall` (not NULL), "mfu_lost": its shares in report order (a dict) or
 * None when it was not formed. 0, or -1 with an exception. */
int mfu_py_figures_into(const mfu_module_state *state, PyObject *dict, const mfu_metrics *m,
                        const mfu_waterfall *waterfall);

/* The ratios' names, interned into module state. */
int mfu_py_intern_ratio_names(mfu_module_state *state);

/* What a step records for field `field` when its value is bad, for a
 * warning: "is recorded as unknown and the figures using it are left out",
 * or "is taken as 0". */
const char *mfu_py_unknown_note(int field);

#endif /* MFU_PY_RECORD_H */
