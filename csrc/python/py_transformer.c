/*
 * py_transformer.c -- Python bindings of core/model/transformer.h (the analytic
 * count), core/model/vision.h (vision towers), core/model/families.h (the family table)
 * and the 6N rule.
 *
 * transformer_flops() takes dicts named as the C structs' fields (dims,
 * options, vision) and the batch, and returns a dict of floats. Every error
 * names the field, with the rule it broke.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mfu_module.h"
#include "py_transformer.h"

/* ------------------------------------------------------------------------
 * Field tables: Python name -> struct offset, kind, rule (for messages)
 * ------------------------------------------------------------------------ */

typedef enum field_kind { FIELD_INT64, FIELD_FLAG, FIELD_CHOICE } field_kind;

typedef struct field_spec {
    const char *name;
    size_t offset;
    field_kind kind;
    const mfu_py_choice *choices; /* FIELD_CHOICE */
    const char *rule;
} field_spec;

static const mfu_py_choice attention_choices[] = {
    {"gqa", MFU_ATTENTION_GQA}, {"mla", MFU_ATTENTION_MLA}, {NULL, 0}};
static const mfu_py_choice mlp_choices[] = {
    {"gelu", MFU_MLP_GELU}, {"swiglu", MFU_MLP_SWIGLU}, {"none", MFU_MLP_NONE},
    {NULL, 0}};
static const mfu_py_choice norm_choices[] = {
    {"rmsnorm", MFU_NORM_RMSNORM}, {"layernorm", MFU_NORM_LAYERNORM},
    {"layernorm_nobias", MFU_NORM_LAYERNORM_NOBIAS}, {NULL, 0}};
static const mfu_py_choice qk_norm_choices[] = {
    {"none", MFU_QK_NORM_NONE}, {"head", MFU_QK_NORM_HEAD},
    {"projection", MFU_QK_NORM_PROJECTION}, {NULL, 0}};
static const mfu_py_choice vision_choices[] = {
    {"none", MFU_VISION_NONE}, {"qwen2_5_vl", MFU_VISION_QWEN2_5_VL},
    {"qwen3_vl", MFU_VISION_QWEN3_VL}, {"gemma3", MFU_VISION_GEMMA3},
    {"llava_clip", MFU_VISION_LLAVA_CLIP}, {"llava_siglip", MFU_VISION_LLAVA_SIGLIP},
    {"llama4", MFU_VISION_LLAMA4}, {NULL, 0}};
static const mfu_py_choice linear_kind_choices[] = {
    {"gated_deltanet", MFU_LINEAR_GATED_DELTANET}, {"kda", MFU_LINEAR_KDA}, {NULL, 0}};
static const mfu_py_choice ssm_kind_choices[] = {
    {"mamba2", MFU_SSM_MAMBA2}, {"mamba1", MFU_SSM_MAMBA1}, {NULL, 0}};
static const mfu_py_choice formula_choices[] = {
    {"6n", MFU_FORMULA_6N}, {"palm", MFU_FORMULA_PALM},
    {"matmul", MFU_FORMULA_MATMUL}, {NULL, 0}};
static const mfu_py_choice causal_choices[] = {
    {"full", MFU_CAUSAL_FULL}, {"half", MFU_CAUSAL_HALF}, {NULL, 0}};
static const mfu_py_choice recompute_choices[] = {
    {"none", MFU_RECOMPUTE_NONE}, {"full", MFU_RECOMPUTE_FULL},
    {"selective", MFU_RECOMPUTE_SELECTIVE}, {NULL, 0}};
static const mfu_py_choice lora_choices[] = {
    {"q", MFU_LORA_Q}, {"k", MFU_LORA_K}, {"v", MFU_LORA_V},
    {"o", MFU_LORA_O}, {"gate", MFU_LORA_GATE}, {"up", MFU_LORA_UP},
    {"down", MFU_LORA_DOWN}, {NULL, 0}};

#define INT(f, rule) {#f, offsetof(mfu_transformer_dims, f), FIELD_INT64, NULL, rule}
#define FLAG(f) {#f, offsetof(mfu_transformer_dims, f), FIELD_FLAG, NULL, "must be a bool"}
#define CHOICE(f, c, rule) {#f, offsetof(mfu_transformer_dims, f), FIELD_CHOICE, c, rule}
#define GE0 "must be >= 0"

static const field_spec dim_fields[] = {
    INT(hidden_size, "must be >= 1"),
    INT(num_layers, "must be >= 1"),
    INT(vocab_size, "must be >= 1"),
    INT(num_heads, "must be >= 1 with attention layers and, without head_dim, "
                   "divide hidden_size"),
    INT(num_kv_heads, "must be between 1 and num_heads and divide num_heads "
                      "(0 = num_heads)"),
    INT(head_dim, "must be >= 1 (0 = hidden_size / num_heads)"),
    CHOICE(attention, attention_choices, "must be 'gqa' or 'mla'"),
    FLAG(qkv_bias), FLAG(attention_out_bias),
    CHOICE(qk_norm, qk_norm_choices, "must be 'none', 'head' or 'projection'"),
    FLAG(attention_gate), FLAG(attention_sinks),
    INT(q_lora_rank, GE0), INT(kv_lora_rank, "must be >= 1 with MLA"),
    INT(qk_nope_head_dim, "qk_nope_head_dim + qk_rope_head_dim must be >= 1 "
                          "with MLA"),
    INT(qk_rope_head_dim, GE0), INT(v_head_dim, "must be >= 1 with MLA"),
    CHOICE(mlp, mlp_choices, "must be 'gelu', 'swiglu' or 'none'"),
    INT(intermediate_size, "must be >= 1 when any layer has a dense MLP "
                           "(0 with mlp 'none')"),
    FLAG(mlp_bias),
    CHOICE(norm, norm_choices, "must be 'rmsnorm', 'layernorm' or "
                               "'layernorm_nobias'"),
    INT(norms_per_layer, GE0),
    INT(num_experts, "must be >= 0 (0 with mlp 'none')"),
    INT(experts_per_token, "must be between 1 and num_experts (0 without "
                           "experts)"),
    INT(moe_intermediate_size, "must be >= 1 with experts (0 without)"),
    INT(shared_expert_intermediate_size, "must be >= 0, and 0 without experts"),
    {"shared_expert_gate", offsetof(mfu_transformer_dims, shared_expert_gate),
     FIELD_FLAG, NULL, "needs a shared expert"},
    {"router_bias", offsetof(mfu_transformer_dims, router_bias), FIELD_FLAG,
     NULL, "needs experts"},
    INT(num_dense_layers, "must be between 0 and the layers with an MLP "
                             "(num_layers - num_mixer_only_layers)"),
    FLAG(tie_word_embeddings),
    INT(num_positions, GE0),
    INT(sliding_window, GE0),
    INT(num_sliding_layers, "must be between 0 and the attention layers, and "
                            "0 without sliding_window"),
    INT(attention_chunk_size, GE0),
    INT(num_chunked_layers, "must be between 0 and the attention layers left, "
                            "and 0 without attention_chunk_size"),
    INT(num_linear_layers, "must be between 0 and num_layers - "
                              "num_mlp_only_layers"),
    INT(linear_num_key_heads, "must be >= 1 with linear layers"),
    INT(linear_key_head_dim, "must be >= 1 with linear layers"),
    INT(linear_num_value_heads, "must be >= 1 with linear layers and a "
                                "multiple of linear_num_key_heads"),
    INT(linear_value_head_dim, "must be >= 1 with linear layers"),
    INT(linear_conv_kernel, GE0), INT(linear_chunk_size, "must be >= 1"),
    INT(num_ssm_layers, "must be between 0 and num_layers - num_mlp_only_layers - "
                           "num_linear_layers (ssm_parallel: the attention layers)"),
    INT(ssm_num_heads, "must be >= 1 with SSM layers"),
    INT(ssm_head_dim, "must be >= 1 with SSM layers"),
    INT(ssm_state_size, "must be >= 1 with SSM layers"),
    INT(ssm_num_groups, "must be >= 1 with SSM layers and divide ssm_num_heads"),
    INT(ssm_conv_kernel, GE0), INT(ssm_chunk_size, "must be >= 1"),
    FLAG(ssm_conv_bias), FLAG(ssm_proj_bias),
    INT(num_mtp_layers, GE0),
    /* hybrid mixers and layouts (core/model/family_mla.h, core/model/family_hybrid.h) */
    CHOICE(linear_kind, linear_kind_choices, "must be 'gated_deltanet' or 'kda' "
                                             "(kda: key and value heads and dims equal)"),
    CHOICE(ssm_kind, ssm_kind_choices, "must be 'mamba2' or 'mamba1'"),
    {"ssm_parallel", offsetof(mfu_transformer_dims, ssm_parallel), FIELD_FLAG, NULL,
     "must be a bool; the SSM layers run beside attention, so at most the "
     "attention layers"},
    FLAG(ssm_norm), FLAG(ssm_out_proj_bias),
    INT(ssm_intermediate_size, "must be >= 1 with Mamba-1 layers"),
    INT(ssm_dt_rank, "must be >= 1 with Mamba-1 layers"),
    FLAG(ssm_inner_norms),
    INT(num_short_conv_layers, "must be between 0 and the layers left by the "
                               "other mixers"),
    INT(short_conv_kernel, "must be >= 1 with short-conv layers"),
    FLAG(short_conv_bias),
    INT(num_mlp_only_layers, "must be between 0 and num_layers, and 0 with mlp "
                             "'none'"),
    INT(num_mixer_only_layers, "must be between 0 and num_layers - "
                               "num_mlp_only_layers"),
    INT(moe_latent_size, "must be >= 0, and 0 without experts"),
    FLAG(unbiased_experts),
    /* dense / MoE family structure (family_dense.c, family_moe.c) */
    {"attention_gate_proj", offsetof(mfu_transformer_dims, attention_gate_proj), FIELD_FLAG,
     NULL, "needs attention_gate (and no LoRA: adapters on a separate gate_proj are not "
           "counted)"},
    FLAG(lm_head_bias),
    {"bidirectional", offsetof(mfu_transformer_dims, bidirectional), FIELD_FLAG, NULL,
     "must be a bool, and false with chunked layers"},
    INT(mlp_act_params, GE0),
    {NULL, 0, FIELD_INT64, NULL, NULL},
};

#undef INT
#undef FLAG
#undef CHOICE
#define VINT(f, rule) {#f, offsetof(mfu_vision_dims, f), FIELD_INT64, NULL, rule}

static const field_spec vision_fields[] = {
    {"kind", offsetof(mfu_vision_dims, kind), FIELD_CHOICE, vision_choices,
     "must be 'qwen2_5_vl', 'qwen3_vl', 'gemma3', 'llava_clip', 'llava_siglip' "
     "or 'llama4'"},
    VINT(depth, "must be >= 1"), VINT(hidden_size, "must be >= 1"),
    VINT(intermediate_size, "must be >= 1"),
    VINT(num_heads, "must be >= 1 and divide hidden_size"),
    VINT(in_channels, "must be >= 1"), VINT(patch_size, "must be >= 1"),
    VINT(temporal_patch_size, "must be >= 1"),
    VINT(spatial_merge_size, "must be >= 1"),
    VINT(out_hidden_size, "must be >= 1"),
    VINT(window_size, "must be >= spatial_merge_size * patch_size with "
                      "windowed blocks (Qwen2.5-VL only)"),
    VINT(num_full_blocks, "must be between 0 and depth (Qwen2.5-VL only)"),
    VINT(num_deepstack_mergers, "must be between 0 and depth (Qwen3-VL only)"),
    VINT(num_position_embeddings, "must be >= 0 (Qwen3-VL only)"),
    /* fixed-resolution towers (core/model/vision_tiles.h) */
    VINT(image_size, "must be >= patch_size (tiled towers)"),
    VINT(tokens_per_image, "must be >= 1, and with images at most the tile's "
                           "patches (Gemma 3 only)"),
    VINT(feature_layers, "must be between 1 and depth + 1 (LLaVA only)"),
    VINT(unused_layers, "must be between 0 and depth (LLaVA only)"),
    {"keep_cls", offsetof(mfu_vision_dims, keep_cls), FIELD_FLAG, NULL,
     "must be a bool (LLaVA only)"},
    {"use_head", offsetof(mfu_vision_dims, use_head), FIELD_FLAG, NULL,
     "must be a bool (SigLIP towers only)"},
    {"projector_bias", offsetof(mfu_vision_dims, projector_bias), FIELD_FLAG, NULL,
     "must be a bool (LLaVA only)"},
    {"image_newline", offsetof(mfu_vision_dims, image_newline), FIELD_FLAG, NULL,
     "must be a bool (LLaVA-NeXT / OneVision only)"},
    VINT(pixel_shuffle_inverse, "must be >= 1 and divide the tile's patches "
                                "per side (Llama 4 only)"),
    VINT(projector_input_dim, "must be >= 1 (Llama 4 only)"),
    VINT(projector_output_dim, "must be >= 1 (Llama 4 only)"),
    VINT(vision_output_dim, "must be >= 1 (Llama 4 only)"),
    {NULL, 0, FIELD_INT64, NULL, NULL},
};

#undef VINT
#undef GE0

static const char *option_rule(const char *field)
{
    static const struct {
        const char *field, *rule;
    } rules[] = {
        {"lora_rank", "must be >= 0; LoRA is counted on GQA attention and MLP "
                      "layers only (not MLA, linear-attention, SSM, a separate "
                      "attention gate_proj or a vision tower)"},
        {"lora_targets", "must be non-empty exactly when lora_rank > 0 ('gate' "
                         "needs a SwiGLU MLP)"},
        {"seq_lens", "the batch has no tokens"},
        {"image_grid_thw", "each grid is [t, h, w] with t, h, w >= 1 and h, w "
                           "multiples of vision.spatial_merge_size"},
        {"pixel_values", "each tile must be vision.image_size pixels square"},
        {"image_tokens", "the images make more image tokens than the batch holds: "
                         "seq_len / seq_lens count every token of a sequence, image "
                         "placeholders included"},
    };
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
        if (strcmp(rules[i].field, field) == 0)
            return rules[i].rule;
    return "invalid value";
}

static const char *field_rule(const char *field)
{
    for (const field_spec *f = dim_fields; f->name != NULL; f++)
        if (strcmp(f->name, field) == 0)
            return f->rule;
    if (strncmp(field, "vision.", 7) == 0)
        for (const field_spec *f = vision_fields; f->name != NULL; f++)
            if (strcmp(f->name, field + 7) == 0)
                return f->rule;
    return option_rule(field);
}

/* ------------------------------------------------------------------------
 * Parsing
 * ------------------------------------------------------------------------ */

static int set_field(const field_spec *f, PyObject *value, char *base)
{
    char *slot = base + f->offset;
    int choice;
    switch (f->kind) {
    case FIELD_INT64:
        return mfu_py_int64_arg(value, f->name, (int64_t *)(void *)slot);
    case FIELD_FLAG:
        return mfu_py_flag_arg(value, f->name, (int *)(void *)slot);
    case FIELD_CHOICE:
    default:
        if (mfu_py_choice_arg(value, f->name, f->choices, &choice) < 0)
            return -1;
        *(int *)(void *)slot = choice; /* the enums are int-sized */
        return 0;
    }
}

/* A dict of `table`'s fields into the struct at `base` (preset by its init). */
static int parse_fields(PyObject *dict, const char *what, const field_spec *table,
                        char *base)
{
    PyObject *key, *value;
    Py_ssize_t pos = 0;

    if (!PyDict_Check(dict)) {
        PyErr_Format(PyExc_TypeError, "%s must be a dict, not %.80s", what,
                     Py_TYPE(dict)->tp_name);
        return -1;
    }
    while (PyDict_Next(dict, &pos, &key, &value)) {
        const field_spec *f;
        const char *name = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : NULL;
        if (name == NULL) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "%s: keys must be str, got %R", what, key);
            return -1;
        }
        for (f = table; f->name != NULL; f++)
            if (strcmp(f->name, name) == 0)
                break;
        if (f->name == NULL) {
            PyErr_Format(PyExc_TypeError, "%s: unknown field %R", what, key);
            return -1;
        }
        if (set_field(f, value, base) < 0)
            return -1;
    }
    return 0;
}

static int parse_lora_targets(PyObject *obj, unsigned *out)
{
    PyObject *seq;
    unsigned mask = 0;

    if (PyUnicode_Check(obj)) {
        PyErr_SetString(PyExc_TypeError,
                        "lora_targets must be a sequence of str, not a str");
        return -1;
    }
    seq = PySequence_Fast(obj, "lora_targets must be a sequence of str");
    if (seq == NULL)
        return -1;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        int bit;
        if (mfu_py_choice_arg(PySequence_Fast_GET_ITEM(seq, i), "lora_targets",
                              lora_choices, &bit) < 0) {
            Py_DECREF(seq);
            return -1;
        }
        mask |= (unsigned)bit;
    }
    Py_DECREF(seq);
    *out = mask;
    return 0;
}

static int parse_option(const char *name, PyObject *value,
                        mfu_transformer_options *o)
{
    int choice = 0;
    if (strcmp(name, "formula") == 0 || strcmp(name, "causal_attention") == 0 ||
        strcmp(name, "activation_recompute") == 0) {
        const mfu_py_choice *table = name[0] == 'f'   ? formula_choices
                                     : name[0] == 'c' ? causal_choices
                                                      : recompute_choices;
        if (mfu_py_choice_arg(value, name, table, &choice) < 0)
            return -1;
        if (name[0] == 'f')
            o->formula = (mfu_flops_formula)choice;
        else if (name[0] == 'c')
            o->causal = (mfu_causal)choice;
        else
            o->recompute = (mfu_recompute)choice;
        return 0;
    }
    if (strcmp(name, "include_lm_head") == 0)
        return mfu_py_flag_arg(value, name, &o->include_lm_head);
    if (strcmp(name, "include_embedding") == 0)
        return mfu_py_flag_arg(value, name, &o->include_embedding);
    if (strcmp(name, "lora_rank") == 0)
        return mfu_py_int64_arg(value, name, &o->lora_rank);
    if (strcmp(name, "lora_targets") == 0)
        return parse_lora_targets(value, &o->lora_targets);
    PyErr_Format(PyExc_TypeError, "options: unknown field '%s'", name);
    return -1;
}

static int parse_options(PyObject *dict, mfu_transformer_options *options)
{
    PyObject *key, *value;
    Py_ssize_t pos = 0;

    if (!PyDict_Check(dict)) {
        PyErr_Format(PyExc_TypeError, "options must be a dict, not %.80s",
                     Py_TYPE(dict)->tp_name);
        return -1;
    }
    mfu_transformer_options_init(options);
    while (PyDict_Next(dict, &pos, &key, &value)) {
        const char *name = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : NULL;
        if (name == NULL) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "options: keys must be str, got %R", key);
            return -1;
        }
        if (parse_option(name, value, options) < 0)
            return -1;
    }
    return 0;
}

/* seq_lens, or batch_size with seq_len, into a batch; *lens is PyMem. */
static int parse_batch(PyObject *lens_obj, PyObject *batch_obj,
                       PyObject *seq_len_obj, mfu_batch *batch, int64_t **lens,
                       int64_t *one)
{
    size_t count = 0;
    *lens = NULL;
    if (lens_obj != Py_None) {
        if (batch_obj != Py_None || seq_len_obj != Py_None) {
            PyErr_SetString(PyExc_TypeError, "transformer_flops: give seq_lens or "
                                             "batch_size and seq_len, not both");
            return -1;
        }
        if (mfu_py_int64_array_arg(lens_obj, "seq_lens", lens, &count) < 0)
            return -1;
        *batch = (mfu_batch){.lengths = *lens, .count = count, .repeat = 1};
        for (size_t i = 0; i < count; i++)
            if ((*lens)[i] < 0) {
                mfu_py_raise(MFU_ERR_INVALID_ARGUMENT, "seq_lens", "lengths must be >= 0");
                return -1;
            }
        return 0;
    }
    if (batch_obj == Py_None || seq_len_obj == Py_None) {
        PyErr_SetString(PyExc_TypeError, "transformer_flops: give seq_lens or "
                                         "both batch_size and seq_len");
        return -1;
    }
    {
        long long repeat, length;
        if (mfu_py_int_arg(batch_obj, "batch_size", 1, INT64_MAX, &repeat) < 0 ||
            mfu_py_int_arg(seq_len_obj, "seq_len", 1, INT64_MAX, &length) < 0)
            return -1;
        *one = (int64_t)length;
        *batch = (mfu_batch){.lengths = one, .count = 1, .repeat = (int64_t)repeat};
    }
    return 0;
}

/* A sequence of [t, h, w] rows into a PyMem array of grids. */
static int parse_grids(PyObject *obj, mfu_vision_grid **grids, size_t *count)
{
    PyObject *seq;
    Py_ssize_t n;
    *grids = NULL;
    *count = 0;
    if (obj == Py_None)
        return 0;
    seq = PySequence_Fast(obj, "grids must be a sequence of [t, h, w]");
    if (seq == NULL)
        return -1;
    n = PySequence_Fast_GET_SIZE(seq);
    *grids = PyMem_Calloc((size_t)(n > 0 ? n : 1), sizeof **grids);
    if (*grids == NULL) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t thw[3];
        if (mfu_py_shape_arg(PySequence_Fast_GET_ITEM(seq, i), "image_grid_thw", 3,
                             thw) < 0) {
            Py_DECREF(seq);
            return -1;
        }
        (*grids)[i] = (mfu_vision_grid){thw[0], thw[1], thw[2]};
    }
    Py_DECREF(seq);
    *count = (size_t)n;
    return 0;
}

int mfu_py_count_inputs_parse(PyObject *dims_obj, PyObject *lens_obj, PyObject *batch_obj,
                              PyObject *seq_len_obj, PyObject *vision_obj,
                              PyObject *grids_obj, mfu_py_count_inputs *in)
{
    *in = (mfu_py_count_inputs){.grids = NULL, .lens = NULL};
    mfu_transformer_dims_init(&in->dims);
    mfu_vision_dims_init(&in->vision.dims);
    if (parse_fields(dims_obj, "dims", dim_fields, (char *)&in->dims) < 0 ||
        (vision_obj != Py_None &&
         parse_fields(vision_obj, "vision", vision_fields, (char *)&in->vision.dims) < 0) ||
        parse_grids(grids_obj, &in->grids, &in->vision.num_grids) < 0 ||
        parse_batch(lens_obj, batch_obj, seq_len_obj, &in->batch, &in->lens, &in->one) < 0) {
        mfu_py_count_inputs_free(in);
        return -1;
    }
    in->vision.grids = in->grids;
    return 0;
}

int mfu_py_dims_parse(PyObject *dims_obj, mfu_transformer_dims *dims)
{
    mfu_transformer_dims_init(dims);
    return parse_fields(dims_obj, "dims", dim_fields, (char *)dims);
}

void mfu_py_count_inputs_free(mfu_py_count_inputs *in)
{
    PyMem_Free(in->lens);
    PyMem_Free(in->grids);
    in->lens = NULL;
    in->grids = NULL;
}

const char *mfu_py_transformer_field_rule(const char *field)
{
    return field_rule(field);
}

int mfu_py_transformer_options_parse(PyObject *dict, mfu_transformer_options *options)
{
    return parse_options(dict, options);
}

/* ------------------------------------------------------------------------
 * Functions
 * ------------------------------------------------------------------------ */

PyObject *mfu_py_transformer_result(const mfu_transformer_flops *r)
{
    return Py_BuildValue(
        "{s:d,s:d,s:d,s:d,s:d,s:d,s:d,s:d,s:d,s:d,s:d,s:d}", "model_flops",
        r->model_flops, "hardware_flops", r->hardware_flops, "forward_flops",
        r->forward_flops, "attention_flops", r->attention_flops, "scan_flops",
        r->scan_flops, "language_flops", r->language_flops, "vision_flops",
        r->vision_flops, "num_params", r->num_params, "num_embedding_params",
        r->num_embedding_params, "num_active_params", r->num_active_params,
        "num_adapter_params", r->num_adapter_params, "num_tokens", r->num_tokens);
}

static PyObject *py_transformer_flops(PyObject *module, PyObject *args,
                                      PyObject *kwargs)
{
    static char *keywords[] = {"dims", "options", "seq_lens", "batch_size",
                               "seq_len", "vision", "grids", NULL};
    PyObject *dims_obj, *options_obj, *lens_obj = Py_None, *batch_obj = Py_None;
    PyObject *seq_len_obj = Py_None, *vision_obj = Py_None, *grids_obj = Py_None;
    PyObject *result = NULL;
    mfu_transformer_options options;
    mfu_py_count_inputs in;
    mfu_transformer_flops out;
    const char *bad_field = NULL;
    mfu_status st;

    (void)module;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|$OOOOO:transformer_flops",
                                     keywords, &dims_obj, &options_obj, &lens_obj,
                                     &batch_obj, &seq_len_obj, &vision_obj, &grids_obj) ||
        parse_options(options_obj, &options) < 0 ||
        mfu_py_count_inputs_parse(dims_obj, lens_obj, batch_obj, seq_len_obj, vision_obj,
                                  grids_obj, &in) < 0)
        return NULL;
    st = mfu_transformer_flops_compute(&in.dims, &options, &in.batch, &in.vision, &out,
                                       &bad_field);
    if (st != MFU_OK)
        mfu_py_raise(st, bad_field != NULL ? bad_field : "dims", "%s",
                     bad_field != NULL ? field_rule(bad_field) : "invalid");
    else
        result = mfu_py_transformer_result(&out);
    mfu_py_count_inputs_free(&in);
    return result;
}

static int put(PyObject *dict, const char *key, PyObject *value)
{
    int rc = value == NULL ? -1 : PyDict_SetItemString(dict, key, value);
    Py_XDECREF(value);
    return rc;
}

static PyObject *py_transformer_family(PyObject *module, PyObject *arg)
{
    const mfu_family *f;
    const char *name;
    PyObject *d;

    (void)module;
    if (mfu_py_str_arg(arg, "model_type", &name) < 0)
        return NULL;
    f = mfu_family_find(name);
    if (f == NULL)
        Py_RETURN_NONE;
    d = PyDict_New();
    if (d == NULL)
        return NULL;
    if (put(d, "attention", PyUnicode_FromString(mfu_py_choice_name(attention_choices, (int)f->attention))) < 0 ||
        put(d, "mlp", PyUnicode_FromString(mfu_py_choice_name(mlp_choices, (int)f->mlp))) < 0 ||
        put(d, "norm", PyUnicode_FromString(mfu_py_choice_name(norm_choices, (int)f->norm))) < 0 ||
        put(d, "norms_per_layer", PyLong_FromLongLong((long long)f->norms_per_layer)) < 0 ||
        put(d, "qkv_bias", PyBool_FromLong(f->qkv_bias)) < 0 ||
        put(d, "attention_out_bias", PyBool_FromLong(f->attention_out_bias)) < 0 ||
        put(d, "qk_norm", PyUnicode_FromString(mfu_py_choice_name(qk_norm_choices, (int)f->qk_norm))) < 0 ||
        put(d, "attention_gate", PyBool_FromLong(f->attention_gate)) < 0 ||
        put(d, "attention_sinks", PyBool_FromLong(f->attention_sinks)) < 0 ||
        put(d, "mlp_bias", PyBool_FromLong(f->mlp_bias)) < 0 ||
        put(d, "shared_expert_gate", PyBool_FromLong(f->shared_expert_gate)) < 0 ||
        put(d, "router_bias", PyBool_FromLong(f->router_bias)) < 0 ||
        put(d, "tie_word_embeddings", PyBool_FromLong(f->tie_word_embeddings)) < 0 ||
        (f->linear_chunk_size > 0 &&
         put(d, "linear_chunk_size", PyLong_FromLongLong((long long)f->linear_chunk_size)) < 0) ||
        put(d, "vision", PyUnicode_FromString(mfu_py_choice_name(vision_choices, (int)f->vision))) < 0 ||
        put(d, "linear_kind", PyUnicode_FromString(mfu_py_choice_name(linear_kind_choices, (int)f->linear_kind))) < 0 ||
        put(d, "ssm_kind", PyUnicode_FromString(mfu_py_choice_name(ssm_kind_choices, (int)f->ssm_kind))) < 0 ||
        put(d, "ssm_parallel", PyBool_FromLong(f->ssm_parallel)) < 0 ||
        put(d, "ssm_inner_norms", PyBool_FromLong(f->ssm_inner_norms)) < 0 ||
        put(d, "unbiased_experts", PyBool_FromLong(f->unbiased_experts)) < 0 ||
        put(d, "attention_gate_proj", PyBool_FromLong(f->attention_gate_proj)) < 0) {
        Py_DECREF(d);
        return NULL;
    }
    return d;
}

static PyObject *py_transformer_dim_names(PyObject *module, PyObject *unused)
{
    Py_ssize_t n = 0;
    PyObject *names;

    (void)module;
    (void)unused;
    while (dim_fields[n].name != NULL)
        n++;
    names = PyTuple_New(n);
    if (names == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *s = PyUnicode_FromString(dim_fields[i].name);
        if (s == NULL) {
            Py_DECREF(names);
            return NULL;
        }
        PyTuple_SET_ITEM(names, i, s);
    }
    return names;
}

static PyMethodDef transformer_methods[] = {
    {"transformer_flops", (PyCFunction)(void (*)(void))py_transformer_flops,
     METH_VARARGS | METH_KEYWORDS,
     "transformer_flops(dims, options, *, seq_lens=None, batch_size=None, "
     "seq_len=None, vision=None, grids=None)\n--\n\n"
     "Analytic FLOPs of a model (see core/model/transformer.h); a dict of floats:\n"
     "model_flops, hardware_flops, forward_flops, attention_flops, scan_flops,\n"
     "language_flops, vision_flops, num_params, num_embedding_params,\n"
     "num_active_params, num_adapter_params, num_tokens."},
    {"transformer_family", (PyCFunction)py_transformer_family, METH_O,
     "transformer_family(model_type, /)\n--\n\n"
     "The structural dims of a model family (core/model/families.c), or None."},
    {"transformer_dim_names", (PyCFunction)py_transformer_dim_names, METH_NOARGS,
     "transformer_dim_names()\n--\n\nThe dims fields transformer_flops() reads, "
     "in table order."},
    {NULL, NULL, 0, NULL},
};

int mfu_py_transformer_exec(PyObject *module)
{
    return PyModule_AddFunctions(module, transformer_methods);
}
