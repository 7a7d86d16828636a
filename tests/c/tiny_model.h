/*
 * tiny_model.h -- the tiny GQA SwiGLU model the transformer tests count by
 * hand: d 8, L 2, H 4, H_kv 2 (head dim 2), I 16, V 10. Per token per layer:
 * q 64, k 32, v 32, o 64 = 192 attention weights; SwiGLU 3 * 8 * 16 = 384.
 *
 *   tiny_gqa_dims()  those dims on top of mfu_transformer_dims_init()'s
 */
#ifndef MFU_TEST_TINY_MODEL_H
#define MFU_TEST_TINY_MODEL_H

#include "transformer.h"

static inline mfu_transformer_dims tiny_gqa_dims(void)
{
    mfu_transformer_dims d;
    mfu_transformer_dims_init(&d);
    d.hidden_size = 8;
    d.num_layers = 2;
    d.num_heads = 4;
    d.num_kv_heads = 2;
    d.intermediate_size = 16;
    d.vocab_size = 10;
    return d;
}

#endif
