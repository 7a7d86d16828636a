/*
 * py_generation.c -- Python binding of core/model/generation.h: the prefill and
 * decode FLOPs and bytes of a generation.
 */
#include <string.h>

#include "../core/model/generation.h"
#include "py_transformer.h"

static const mfu_py_choice dtype_choices[] = {
    {"fp64", MFU_DTYPE_FP64}, {"fp32", MFU_DTYPE_FP32}, {"tf32", MFU_DTYPE_TF32},
    {"fp16", MFU_DTYPE_FP16}, {"bf16", MFU_DTYPE_BF16}, {"fp8", MFU_DTYPE_FP8},
    {"int8", MFU_DTYPE_INT8}, {"int4", MFU_DTYPE_INT4}, {"fp4", MFU_DTYPE_FP4},
    {NULL, 0}};
static const mfu_py_choice mla_cache_choices[] = {
    {"latent", MFU_MLA_CACHE_LATENT}, {"expanded", MFU_MLA_CACHE_EXPANDED}, {NULL, 0}};

static const char *generation_rule(const char *field)
{
    static const struct {
        const char *field, *rule;
    } rules[] = {
        {"prompt_lens", "one or more sequences, each prompt of >= 1 tokens"},
        {"output_lens", "each sequence generates >= 1 tokens, one length per prompt"},
        {"lora_rank", "generation is counted for a full model, not LoRA adapters"},
        {"activation_recompute", "generation runs no backward: nothing is recomputed"},
        {"num_ssm_layers", "generation is counted for attention and gated-DeltaNet "
                           "layers; count an SSM model's generate() with "
                           "GenerationCounter"},
        {"num_short_conv_layers", "generation is counted for attention and "
                                  "gated-DeltaNet layers; count a short-conv model's "
                                  "generate() with GenerationCounter"},
        {"linear_kind", "generation is counted for gated-DeltaNet linear layers, not "
                        "Kimi delta attention; use GenerationCounter"},
        {"bidirectional", "a bidirectional model does not generate with a causal cache"},
    };
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
        if (strcmp(rules[i].field, field) == 0)
            return rules[i].rule;
    return mfu_py_transformer_field_rule(field);
}

static PyObject *generation_result(const mfu_generation_flops *r)
{
    return Py_BuildValue(
        "{s:d,s:d,s:d,s:d,s:d,s:d,s:d,s:d,s:d,s:d,s:d,s:d,s:d,s:d,s:d}",
        "prefill_flops", r->prefill_flops, "decode_flops", r->decode_flops,
        "prefill_attention_flops", r->prefill_attention_flops, "decode_attention_flops",
        r->decode_attention_flops, "prefill_tokens", r->prefill_tokens, "decode_tokens",
        r->decode_tokens, "sequences", r->sequences, "decode_forwards", r->decode_forwards,
        "prefill_weight_bytes", r->prefill_weight_bytes, "prefill_kv_write_bytes",
        r->prefill_kv_write_bytes, "prefill_state_bytes", r->prefill_state_bytes,
        "decode_weight_bytes", r->decode_weight_bytes, "decode_kv_read_bytes",
        r->decode_kv_read_bytes, "decode_kv_write_bytes", r->decode_kv_write_bytes,
        "decode_state_bytes", r->decode_state_bytes);
}

/* The two length lists (PyMem, freed by the caller; -1 with an exception). */
static int parse_lengths(PyObject *prompts_obj, PyObject *outputs_obj, int64_t **prompts,
                         int64_t **outputs, size_t *count)
{
    size_t n_out = 0;
    *prompts = *outputs = NULL;
    if (mfu_py_int64_array_arg(prompts_obj, "prompt_lens", prompts, count) < 0 ||
        mfu_py_int64_array_arg(outputs_obj, "output_lens", outputs, &n_out) < 0)
        return -1;
    if (n_out != *count) {
        PyErr_Format(PyExc_ValueError,
                     "output_lens: %zu lengths for %zu prompts (one per prompt_lens entry)",
                     n_out, *count);
        return -1;
    }
    return 0;
}

static PyObject *py_generation_flops(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"dims", "options", "prompt_lens", "output_lens",
                               "weight_dtype", "cache_dtype", "mla_cache", NULL};
    PyObject *dims_obj, *options_obj, *prompts_obj, *outputs_obj;
    PyObject *weight_obj = NULL, *cache_obj = NULL, *mla_obj = NULL, *result = NULL;
    mfu_transformer_options options;
    mfu_transformer_dims dims;
    mfu_generation_spec spec;
    mfu_generation_flops out;
    int64_t *prompts = NULL, *outputs = NULL;
    int weight = MFU_DTYPE_BF16, cache = MFU_DTYPE_BF16, mla = MFU_MLA_CACHE_LATENT;
    size_t count = 0;
    const char *bad_field = NULL;
    mfu_status st;

    (void)module;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOO|$OOO:generation_flops", keywords,
                                     &dims_obj, &options_obj, &prompts_obj, &outputs_obj,
                                     &weight_obj, &cache_obj, &mla_obj) ||
        (weight_obj != NULL &&
         mfu_py_choice_arg(weight_obj, "weight_dtype", dtype_choices, &weight) < 0) ||
        (cache_obj != NULL &&
         mfu_py_choice_arg(cache_obj, "cache_dtype", dtype_choices, &cache) < 0) ||
        (mla_obj != NULL && mfu_py_choice_arg(mla_obj, "mla_cache", mla_cache_choices, &mla) < 0) ||
        mfu_py_transformer_options_parse(options_obj, &options) < 0 ||
        mfu_py_dims_parse(dims_obj, &dims) < 0)
        return NULL;
    spec = (mfu_generation_spec){(mfu_dtype)weight, (mfu_dtype)cache, (mfu_mla_cache)mla};
    if (parse_lengths(prompts_obj, outputs_obj, &prompts, &outputs, &count) == 0) {
        st = mfu_generation_flops_compute(&dims, &options, prompts, outputs, count, &spec,
                                          &out, &bad_field);
        if (st != MFU_OK)
            mfu_py_raise(st, bad_field != NULL ? bad_field : "dims", "%s",
                         bad_field != NULL ? generation_rule(bad_field) : "invalid");
        else
            result = generation_result(&out);
    }
    PyMem_Free(prompts);
    PyMem_Free(outputs);
    return result;
}

static PyMethodDef generation_methods[] = {
    {"generation_flops", (PyCFunction)(void (*)(void))py_generation_flops,
     METH_VARARGS | METH_KEYWORDS,
     "generation_flops(dims, options, prompt_lens, output_lens, *, weight_dtype='bf16', "
     "cache_dtype='bf16', mla_cache='latent')\n--\n\n"
     "The prefill and decode FLOPs and bytes of generating output_lens[i] tokens after\n"
     "prompt_lens[i] (core/model/generation.h), a dict of floats: prefill_flops,\n"
     "decode_flops, prefill_attention_flops, decode_attention_flops, prefill_tokens,\n"
     "decode_tokens, sequences, decode_forwards, prefill_weight_bytes,\n"
     "prefill_kv_write_bytes, prefill_state_bytes, decode_weight_bytes,\n"
     "decode_kv_read_bytes, decode_kv_write_bytes, decode_state_bytes."},
    {NULL, NULL, 0, NULL},
};

int mfu_py_generation_exec(PyObject *module)
{
    return PyModule_AddFunctions(module, generation_methods);
}
