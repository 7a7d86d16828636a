/*
 * vision_tiles.h -- fixed-resolution vision towers (the vision.h kinds
 * GEMMA3, LLAVA_CLIP, LLAVA_SIGLIP, LLAMA4): a ViT encoder run on each tile
 * (an image, or one crop of an image) of image_size^2 pixels, then the
 * family's projector. Each grid row (t, h, w) is t tiles of h x w patches,
 * with h = w = image_size / patch_size.
 *
 * Per tile, N = h*w patches, T = N (+1 with a CLS token) tokens, D, I the
 * encoder's widths, L its depth (every layer runs: LLaVA reads a hidden
 * state below the top, but the encoder computes them all, the U layers
 * above the deepest one read forward only):
 *
 *   patch embed  2 * N * (C p^2) * D      (model 2x: the pixels need no grad)
 *   blocks       L * 2 * T * (4 D^2 + 2 D I)    (q, k, v, o; fc1, fc2)
 *   attention    L * 4 * D * T^2                (bidirectional, whole tile)
 *   SigLIP head  (use_head) one probe query: 2*(D^2 + 2 N D^2 + D^2 + 2 D I)
 *                + 4 N D        (attention pooling: it runs, but no projector
 *                reads it (Gemma 3, LLaVA-OneVision): forward only)
 *   projector    Gemma 3: pooled to M tokens, 2 * M * D * d
 *                LLaVA: K tokens (N, or T keeping CLS), 2 K (D f d + d^2)
 *                Llama 4: N / s^2 shuffled tokens of width D s^2 = I,
 *                2 (N / s^2) (I P_in + P_out^2 + V_out d)
 * model = 2x the patch embed + the head and the U unused layers' forward +
 * 3x everything else (nothing after them reaches a loss: no backward, as
 * torch.utils.flop_counter.FlopCounterMode counts the step).
 */
#ifndef MFU_VISION_TILES_H
#define MFU_VISION_TILES_H

#include "vision.h"

/* Whether `kind` is one of this file's towers. */
int mfu_vision_is_tiled(mfu_vision_kind kind);

/* The dims of a tiled kind; bad fields "vision.<name>". */
mfu_status mfu_vision_tiles_validate(const mfu_vision_dims *dims,
                                     const char **bad_field);

/* The tower over the input's grids (bad field "pixel_values" for a grid
 * whose h or w is not image_size / patch_size, or t < 1). */
mfu_status mfu_vision_tiles_compute(const mfu_vision_input *input,
                                    int matmul_only, int with_attention,
                                    mfu_vision_flops *out,
                                    const char **bad_field);

#endif /* MFU_VISION_TILES_H */
