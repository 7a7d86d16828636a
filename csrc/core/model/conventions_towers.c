/* conventions_towers.c -- verl's and VeOmni's own ViT estimates of a Qwen-VL
 * tower (MFU_QUIRK_VIT_ESTIMATE, conventions.h), full training. Both take
 * images_seqlens = h * w per frame, t frames per grid (verl
 * verl/experimental/agent_loop/agent_loop.py line 673, VeOmni
 * veomni/utils/helper.py line 119), and charge 6 x the tower's matmul
 * weights per patch, the mergers included, plus 12 x pairs x D per block:
 *
 *   Qwen3-VL   verl/utils/flops_counter.py @ b178a3c _estimate_qwen3_vit_flop
 *              (line 215); VeOmni veomni/utils/count_flops.py @ d977449
 *              _estimate_qwen3_vit_flop (line 739), the same: patch embed
 *              D*C*tp*p^2, blocks depth x (2*D*I + 4*D^2), (1 + deepstack)
 *              mergers of (out + D*m^2) * D*m^2; full attention in every
 *              block over sum t*(h*w)^2 pairs.
 *   Qwen2.5-VL VeOmni _estimate_qwen_vit_flop (line 831): blocks depth x
 *              (3*D*I + 4*D^2), one merger, no patch embed; the full blocks
 *              (fullatt_block_indexes) over sum t*(h*w)^2 pairs, the others
 *              tokens x (ws*m)^2 with ws = window_size // m // p (line 936).
 */
#include "conventions.h"

static void vit_estimate(const mfu_vision_input *in, mfu_vision_flops *r)
{
    const mfu_vision_dims *d = &in->dims;
    const double dd = (double)d->hidden_size, m = (double)d->spatial_merge_size;
    const double m2 = m * m, p = (double)d->patch_size;
    const double merger = ((double)d->out_hidden_size + dd * m2) * dd * m2;
    const double depth = (double)d->depth;
    double tokens = 0.0, pairs = 0.0, dense, attn;
    for (size_t i = 0; i < in->num_grids; i++) {
        const double frame = (double)in->grids[i].h * (double)in->grids[i].w;
        tokens += (double)in->grids[i].t * frame;
        pairs += (double)in->grids[i].t * frame * frame;
    }
    if (d->kind == MFU_VISION_QWEN3_VL) {
        dense = dd * (double)d->in_channels * (double)d->temporal_patch_size * p * p +
                (2.0 * dd * (double)d->intermediate_size + 4.0 * dd * dd) * depth +
                merger * (1.0 + (double)d->num_deepstack_mergers);
        attn = 12.0 * pairs * dd * depth;
    } else {
        const double full = (double)d->num_full_blocks;
        const double window = (double)(d->window_size / d->spatial_merge_size / d->patch_size *
                                       d->spatial_merge_size);
        dense = (3.0 * dd * (double)d->intermediate_size + 4.0 * dd * dd) * depth + merger;
        attn = 12.0 * pairs * dd * full + 12.0 * tokens * window * window * dd * (depth - full);
    }
    r->model_flops = 6.0 * dense * tokens + attn;
    r->forward_flops = r->model_flops / 3.0;
    r->attention_flops = attn / 3.0;
    r->blocks_forward = r->forward_flops;
}

mfu_status mfu_convention_vit_estimate(const mfu_vision_input *vision, mfu_vision_flops *out,
                                       const char **bad_field)
{
    mfu_status st = mfu_vision_flops_compute(vision, 1, 1, out, bad_field);
    if (st != MFU_OK || (vision->dims.kind != MFU_VISION_QWEN3_VL &&
                         vision->dims.kind != MFU_VISION_QWEN2_5_VL))
        return st;
    vit_estimate(vision, out);
    return MFU_OK;
}
