/* context_parallel.c -- one rank's share of a batch under context
 * parallelism (see context_parallel.h). */
#include <stdlib.h>

#include "blocks.h"
#include "context_parallel.h"
#include "family_hybrid.h"

static mfu_status bad(const char **bad_field, const char *field)
{
    if (bad_field != NULL)
        *bad_field = field;
    return MFU_ERR_INVALID_ARGUMENT;
}

static mfu_status check(const mfu_transformer_dims *d, const mfu_batch *b,
                        const mfu_context_parallel *cp, const char **bf)
{
    if (cp == NULL || cp->degree < 1)
        return bad(bf, "context_parallel");
    if (cp->rank < 0 || cp->rank >= cp->degree)
        return bad(bf, "cp_rank");
    if (cp->mode != MFU_CP_ULYSSES && cp->mode != MFU_CP_RING)
        return bad(bf, "cp_mode");
    if (b == NULL || (b->count > 0 && b->lengths == NULL))
        return bad(bf, "seq_lens");
    for (size_t i = 0; i < b->count; i++)
        if (b->lengths[i] < 0 || b->lengths[i] % cp->degree != 0)
            return bad(bf, "context_parallel");
    if (cp->mode == MFU_CP_RING && cp->degree > 1 &&
        (d->num_sliding_layers > 0 || d->num_chunked_layers > 0 || d->num_linear_layers > 0 ||
         d->num_ssm_layers > 0 || d->num_short_conv_layers > 0 || d->num_mtp_layers > 0 ||
         d->bidirectional))
        return bad(bf, "context_parallel");
    return MFU_OK;
}

static void scale(mfu_transformer_flops *r, double by)
{
    r->model_flops *= by;
    r->hardware_flops *= by;
    r->forward_flops *= by;
    r->attention_flops *= by;
    r->scan_flops *= by;
    r->language_flops *= by;
    r->num_tokens *= by;
}

/* Ring: the rank's chunk of every sequence as its own sequence (the
 * token-linear work and the diagonal block), plus `rank` whole blocks of
 * c x c per head, layer and sequence. */
static mfu_status ring(const mfu_transformer_dims *d, const mfu_transformer_options *o,
                       const mfu_batch *b, const mfu_context_parallel *cp,
                       mfu_transformer_flops *r, const char **bf)
{
    int64_t *chunks = malloc((b->count > 0 ? b->count : 1) * sizeof *chunks);
    const mfu_batch local = {.lengths = chunks, .count = b->count, .repeat = b->repeat};
    double blocks = 0.0, extra;
    mfu_status st;
    if (chunks == NULL)
        return MFU_ERR_NO_MEMORY;
    for (size_t i = 0; i < b->count; i++) {
        chunks[i] = b->lengths[i] / cp->degree;
        blocks += (double)chunks[i] * (double)chunks[i];
    }
    st = mfu_transformer_flops_compute(d, o, &local, NULL, r, bf);
    free(chunks);
    if (st != MFU_OK)
        return st;
    extra = o->formula == MFU_FORMULA_6N ? 0.0
            : mfu_attention_pair_flops(d) * (double)mfu_attention_layer_count(d) *
                  (double)cp->rank * blocks * (double)b->repeat;
    r->forward_flops += extra;
    r->attention_flops += extra;
    r->model_flops += (1.0 + MFU_ATTENTION_MODEL_BACKWARD) * extra;
    r->hardware_flops += (1.0 + MFU_ATTENTION_MODEL_BACKWARD) * extra +
                         (o->recompute != MFU_RECOMPUTE_NONE ? extra : 0.0);
    r->language_flops = r->model_flops;
    return MFU_OK;
}

mfu_status mfu_context_parallel_flops(const mfu_transformer_dims *dims,
                                      const mfu_transformer_options *options,
                                      const mfu_batch *batch,
                                      const mfu_context_parallel *cp,
                                      mfu_transformer_flops *out, const char **bad_field)
{
    mfu_transformer_flops r = {0};
    mfu_status st;
    if (out == NULL)
        return bad(bad_field, "out");
    if ((st = check(dims, batch, cp, bad_field)) != MFU_OK)
        return st;
    if (cp->mode == MFU_CP_RING && cp->degree > 1) {
        if ((st = ring(dims, options, batch, cp, &r, bad_field)) != MFU_OK)
            return st;
    } else {
        if ((st = mfu_transformer_flops_compute(dims, options, batch, NULL, &r, bad_field)) !=
            MFU_OK)
            return st;
        scale(&r, 1.0 / (double)cp->degree); /* Ulysses: every FLOP and token split evenly */
    }
    *out = r;
    return MFU_OK;
}
