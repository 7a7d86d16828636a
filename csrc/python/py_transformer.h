/*
 * py_transformer.h -- the inputs of a transformer count (dims, batch,
 * vision tower and grids) parsed once for py_transformer.c and
 * py_conventions.c, with the rule each field breaks for messages.
 */
#ifndef MFU_PY_TRANSFORMER_H
#define MFU_PY_TRANSFORMER_H

#include "mfu_module.h"

/* Parsed inputs. batch.lengths may point at `one` inside the struct: use it
 * in place, never copied. */
typedef struct mfu_py_count_inputs {
    mfu_transformer_dims dims;
    mfu_vision_input vision;
    mfu_batch batch;
    mfu_vision_grid *grids; /* PyMem */
    int64_t *lens;          /* PyMem */
    int64_t one;
} mfu_py_count_inputs;

/* The dims dict, seq_lens or batch_size + seq_len, the vision dict and the
 * grids (each may be None but the dims); -1 with an exception set. */
int mfu_py_count_inputs_parse(PyObject *dims_obj, PyObject *lens_obj, PyObject *batch_obj,
                              PyObject *seq_len_obj, PyObject *vision_obj,
                              PyObject *grids_obj, mfu_py_count_inputs *in);
void mfu_py_count_inputs_free(mfu_py_count_inputs *in);

/* The dims dict alone into *dims (preset by its init); -1 with an exception. */
int mfu_py_dims_parse(PyObject *dims_obj, mfu_transformer_dims *dims);

/* The rule a dims / vision / option field must follow (for messages). */
const char *mfu_py_transformer_field_rule(const char *field);

/* The options dict (formula, causal_attention, ...); -1 with an exception. */
int mfu_py_transformer_options_parse(PyObject *dict, mfu_transformer_options *options);

/* A count as the dict transformer_flops() returns. */
PyObject *mfu_py_transformer_result(const mfu_transformer_flops *r);

#endif /* MFU_PY_TRANSFORMER_H */
