/*
 * test_kernels.c -- the kernel class table (kernels.h) and the union
 * timeline (timeline.h): every row sourced and reachable, real CUDA, ROCm
 * and CPU names in their classes, unknown names in `other`, the op name
 * normalization; the timeline by hand (two streams, overlap, gaps, a host
 * thread's nesting) and against a brute force, nanosecond by nanosecond,
 * on random timelines.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernels.h"
#include "mfu_limits.h"
#include "timeline.h"

static mfu_kclass class_of(const char *name, unsigned source)
{
    mfu_kclass kclass = MFU_KCLASS_COUNT;
    CHECK(mfu_kclass_of(name, source, &kclass, NULL, NULL) == MFU_OK);
    return kclass;
}

static void test_rows(void)
{
    size_t n = mfu_krule_count();
    CHECK(n >= 100);
    for (size_t i = 0; i < n; i++) {
        const mfu_krule *row = mfu_krule_get(i);
        CHECK(row->pattern != NULL && row->pattern[0] != '\0');
        CHECK(row->source != NULL && strlen(row->source) >= 10); /* every row cites its source */
        CHECK(mfu_kclass_name(row->kclass) != NULL);
        CHECK(row->sources != 0 && (row->sources & ~7u) == 0);
        CHECK(!row->scope || row->sources == MFU_KSOURCE_ANNOTATION);
        for (size_t j = i + 1; j < n; j++) { /* no row repeats another */
            const mfu_krule *other = mfu_krule_get(j);
            CHECK(strcmp(row->pattern, other->pattern) != 0 || row->match != other->match
                  || (row->sources & other->sources) == 0);
        }
        /* every row is reachable: its own pattern, as a name, is decided by it
         * (or by an earlier row of the same class); a prefix or a part gets a
         * tail, so an op's normalization keeps the pattern whole */
        char name[256];
        snprintf(name, sizeof name, "%s%s", row->pattern, row->match == MFU_KMATCH_EXACT ? "" : "x");
        for (unsigned bit = 1; bit <= 4; bit <<= 1) {
            size_t rule = 0;
            mfu_kclass kclass;
            if (!(row->sources & bit))
                continue;
            CHECK(mfu_kclass_of(name, bit, &kclass, NULL, &rule) == MFU_OK);
            CHECK(rule == i || kclass == row->kclass || rule == MFU_KRULE_OP_TABLE);
        }
    }
    CHECK(mfu_krule_get(n) == NULL);
    CHECK(strcmp(mfu_kclass_name(MFU_KCLASS_GEMM), "gemm") == 0);
    CHECK(strcmp(mfu_kclass_name(MFU_KCLASS_COMMUNICATION), "communication") == 0);
    CHECK(mfu_kclass_name(MFU_KCLASS_COUNT) == NULL && mfu_kclass_name(MFU_KCLASS_NONE) == NULL);
}

/* Names copied from public Kineto traces of PyTorch training steps. */
static const struct {
    const char *name;
    mfu_kclass kclass;
} cuda_names[] = {
    {"ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn", MFU_KCLASS_GEMM},
    {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_"
     "execute_segment_k_off_kernel__5x_cublas", MFU_KCLASS_GEMM},
    {"nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT", MFU_KCLASS_GEMM},
    {"void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8>"
     "(cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8::Params)",
     MFU_KCLASS_GEMM},
    {"volta_sgemm_128x64_nn", MFU_KCLASS_GEMM},
    {"void splitKreduce_kernel<32, 16, int, float, float, float, float, true, false, false>"
     "(cublasSplitKParams<float>, float const*, float const*, float*, float const*, "
     "float const*, float const*, float const*, float*, void*, long, float*, int*)",
     MFU_KCLASS_GEMM},
    {"triton_tem_fused_mm_0", MFU_KCLASS_GEMM},
    {"void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, "
     "false, cutlass::bfloat16_t, Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >, "
     "false, true, false, false, true, true, false, false>(pytorch_flash::Flash_fwd_params)",
     MFU_KCLASS_ATTENTION},
    {"void flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<64, 128, 128, "
     "8, 2, 4, 2, false, false, cutlass::half_t>, true, false, false, false, false, false>"
     "(Flash_bwd_params)", MFU_KCLASS_ATTENTION},
    {"fmha_cutlassF_f32_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<float, "
     "cutlass::arch::Sm80, true, 64, 64, 64, true, true>::Params)", MFU_KCLASS_ATTENTION},
    {"cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3_64x64x128_4x1x1_"
     "kernel0_0", MFU_KCLASS_ATTENTION},
    {"void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
     "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)",
     MFU_KCLASS_ELEMENTWISE},
    {"void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<"
     "at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}"
     "::operator()() const::{lambda()#2}::operator()() const::{lambda(c10::BFloat16)#1}> >"
     "(int, at::native::gpu_kernel_impl_nocast<...>)", MFU_KCLASS_ELEMENTWISE},
    {"triton_poi_fused_add_mul_tanh_0", MFU_KCLASS_ELEMENTWISE},
    {"void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>"
     "(int, float, float const*, float const*, float const*, float*, float*, float*)",
     MFU_KCLASS_REDUCTION},
    {"void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, "
     "at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)",
     MFU_KCLASS_REDUCTION},
    {"void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<"
     "float, float, float, float>, unsigned int, float, 4, 4> >(at::native::ReduceOp<float, "
     "at::native::MeanOps<float, float, float, float>, unsigned int, float, 4, 4>)",
     MFU_KCLASS_REDUCTION},
    {"triton_red_fused__log_softmax_0", MFU_KCLASS_REDUCTION},
    {"triton_per_fused_native_layer_norm_0", MFU_KCLASS_REDUCTION},
    {"_rms_norm_forward_kernel", MFU_KCLASS_REDUCTION},
    {"void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
     "namespace)::TensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor"
     "<float, 4, (at::native::ADAM_MODE)1, false>, double*, double, double, double, double, "
     "double, bool, float const*, float const*>(...)", MFU_KCLASS_OPTIMIZER},
    {"ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
     MFU_KCLASS_COMMUNICATION},
    {"ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", MFU_KCLASS_COMMUNICATION},
    {"Memcpy HtoD (Pageable -> Device)", MFU_KCLASS_MEMORY},
    {"Memset (Device)", MFU_KCLASS_MEMORY},
    {"void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
     "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)",
     MFU_KCLASS_MEMORY},
    {"void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<"
     "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() "
     "const::{lambda()#7}::operator()() const::{lambda(float)#1}> >(int, ...)",
     MFU_KCLASS_MEMORY},
    /* ROCm (hipBLASLt / Tensile, CK, RCCL, ROCclr) */
    {"Cijk_Ailk_Bljk_BBS_BH_MT128x128x32_MI32x32x8x1_SN_1LDSB0_APM1_ABV0_ACED0_AF0EM1_AF1EM1",
     MFU_KCLASS_GEMM},
    {"kernel_gemm_xdl_cshuffle_v3<ck::GridwiseGemm_xdl_cshuffle_v3<...> >", MFU_KCLASS_GEMM},
    {"ck_tile::kentry<256, 1, ck_tile::FmhaFwdKernel<...> >", MFU_KCLASS_ATTENTION},
    {"ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)", MFU_KCLASS_COMMUNICATION},
    {"__amd_rocclr_copyBuffer", MFU_KCLASS_MEMORY},
    /* names no row knows */
    {"my_custom_kernel<128>", MFU_KCLASS_OTHER},
    {"void at::native::(anonymous namespace)::indexSelectLargeIndex<float, long, unsigned int, "
     "2, 2, -2, true>(...)", MFU_KCLASS_OTHER},
};

static void test_kernel_names(void)
{
    for (size_t i = 0; i < sizeof cuda_names / sizeof cuda_names[0]; i++) {
        mfu_kclass got = class_of(cuda_names[i].name, MFU_KSOURCE_KERNEL);
        if (!CHECK(got == cuda_names[i].kclass))
            fprintf(stderr, "  %s -> %s\n", cuda_names[i].name, mfu_kclass_name(got));
    }
}

static void test_op_names(void)
{
    size_t rule = 0;
    mfu_kclass kclass;
    int scope = -1;
    /* counted ops: the FLOP op table decides (ops.h) */
    CHECK(mfu_kclass_of("aten::mm", MFU_KSOURCE_OP, &kclass, &scope, &rule) == MFU_OK);
    CHECK(kclass == MFU_KCLASS_GEMM && rule == MFU_KRULE_OP_TABLE && scope == 0);
    CHECK(class_of("aten::addmm", MFU_KSOURCE_OP) == MFU_KCLASS_GEMM);
    CHECK(class_of("aten::convolution_backward", MFU_KSOURCE_OP) == MFU_KCLASS_GEMM);
    CHECK(class_of("aten::_scaled_dot_product_flash_attention_for_cpu", MFU_KSOURCE_OP)
          == MFU_KCLASS_ATTENTION);
    CHECK(class_of("aten::_scaled_dot_product_flash_attention_for_cpu_backward", MFU_KSOURCE_OP)
          == MFU_KCLASS_ATTENTION);
    /* composites and the rest */
    CHECK(class_of("aten::linear", MFU_KSOURCE_OP) == MFU_KCLASS_GEMM);
    CHECK(class_of("aten::matmul", MFU_KSOURCE_OP) == MFU_KCLASS_GEMM);
    CHECK(class_of("aten::conv2d", MFU_KSOURCE_OP) == MFU_KCLASS_GEMM);
    CHECK(class_of("aten::scaled_dot_product_attention", MFU_KSOURCE_OP) == MFU_KCLASS_ATTENTION);
    CHECK(class_of("aten::native_layer_norm", MFU_KSOURCE_OP) == MFU_KCLASS_REDUCTION);
    CHECK(class_of("aten::_log_softmax", MFU_KSOURCE_OP) == MFU_KCLASS_REDUCTION);
    CHECK(class_of("aten::nll_loss_forward", MFU_KSOURCE_OP) == MFU_KCLASS_REDUCTION);
    CHECK(class_of("aten::sum", MFU_KSOURCE_OP) == MFU_KCLASS_REDUCTION);
    CHECK(class_of("aten::_foreach_add_", MFU_KSOURCE_OP) == MFU_KCLASS_OPTIMIZER);
    CHECK(class_of("aten::_fused_adamw_", MFU_KSOURCE_OP) == MFU_KCLASS_OPTIMIZER);
    CHECK(class_of("aten::copy_", MFU_KSOURCE_OP) == MFU_KCLASS_MEMORY);
    CHECK(class_of("aten::cat", MFU_KSOURCE_OP) == MFU_KCLASS_MEMORY);
    CHECK(class_of("c10d::allreduce_", MFU_KSOURCE_OP) == MFU_KCLASS_COMMUNICATION);
    CHECK(class_of("nccl:all_reduce", MFU_KSOURCE_OP) == MFU_KCLASS_COMMUNICATION);
    CHECK(class_of("gloo:all_reduce", MFU_KSOURCE_OP) == MFU_KCLASS_COMMUNICATION);
    /* normalization: in-place, then backward */
    CHECK(class_of("aten::add_", MFU_KSOURCE_OP) == MFU_KCLASS_ELEMENTWISE);
    CHECK(class_of("aten::mul_", MFU_KSOURCE_OP) == MFU_KCLASS_ELEMENTWISE);
    CHECK(class_of("aten::gelu_backward", MFU_KSOURCE_OP) == MFU_KCLASS_ELEMENTWISE);
    CHECK(class_of("aten::tanh_backward", MFU_KSOURCE_OP) == MFU_KCLASS_ELEMENTWISE);
    CHECK(class_of("aten::embedding_dense_backward", MFU_KSOURCE_OP) == MFU_KCLASS_ELEMENTWISE);
    CHECK(class_of("aten::_softmax_backward_data", MFU_KSOURCE_OP) == MFU_KCLASS_REDUCTION);
    CHECK(class_of("aten::native_layer_norm_backward", MFU_KSOURCE_OP) == MFU_KCLASS_REDUCTION);
    CHECK(class_of("aten::fill_", MFU_KSOURCE_OP) == MFU_KCLASS_MEMORY);
    /* normalization only for ops: a kernel named like an op is not stripped */
    CHECK(class_of("aten::add_", MFU_KSOURCE_KERNEL) == MFU_KCLASS_OTHER);
    /* unknown ops: other (views, allocation, autograd bookkeeping) */
    CHECK(class_of("aten::view", MFU_KSOURCE_OP) == MFU_KCLASS_OTHER);
    CHECK(class_of("aten::empty_strided", MFU_KSOURCE_OP) == MFU_KCLASS_OTHER);
    CHECK(class_of("autograd::engine::evaluate_function: AddmmBackward0", MFU_KSOURCE_OP)
          == MFU_KCLASS_OTHER);
    CHECK(class_of("_", MFU_KSOURCE_OP) == MFU_KCLASS_OTHER);
    CHECK(class_of("", MFU_KSOURCE_OP) == MFU_KCLASS_OTHER);
    /* inductor with its C++ kernel profile */
    CHECK(class_of("graph_0_cpp_fused_add_mul_sin_sum_0", MFU_KSOURCE_OP) == MFU_KCLASS_FUSED);
}

static void test_annotations(void)
{
    mfu_kclass kclass;
    int scope = -1;
    size_t rule = 0;
    CHECK(mfu_kclass_of("Optimizer.step#AdamW.step", MFU_KSOURCE_ANNOTATION, &kclass, &scope,
                        &rule) == MFU_OK);
    CHECK(kclass == MFU_KCLASS_OPTIMIZER && scope == 1 && rule < mfu_krule_count());
    CHECK(class_of("## Call CompiledFxGraph fwc6cciurifv3ec7gjrno4mqru7rolrgh25sseuci3ypf6rmzmh3 ##",
                   MFU_KSOURCE_ANNOTATION) == MFU_KCLASS_FUSED);
    /* a user's own annotation is transparent */
    CHECK(mfu_kclass_of("my forward", MFU_KSOURCE_ANNOTATION, &kclass, &scope, &rule) == MFU_OK);
    CHECK(kclass == MFU_KCLASS_NONE && scope == 0 && rule == MFU_KRULE_DEFAULT);
    CHECK(class_of("ProfilerStep#3", MFU_KSOURCE_ANNOTATION) == MFU_KCLASS_NONE);
    /* an annotation is not an op: no op table, no op rows */
    CHECK(class_of("aten::mm", MFU_KSOURCE_ANNOTATION) == MFU_KCLASS_NONE);
}

static void test_errors(void)
{
    mfu_kclass kclass = MFU_KCLASS_GEMM;
    CHECK(mfu_kclass_of(NULL, MFU_KSOURCE_OP, &kclass, NULL, NULL) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_kclass_of("x", MFU_KSOURCE_OP, NULL, NULL, NULL) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_kclass_of("x", 0, &kclass, NULL, NULL) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_kclass_of("x", MFU_KSOURCE_OP | MFU_KSOURCE_KERNEL, &kclass, NULL, NULL)
          == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_kclass_of("x", 8, &kclass, NULL, NULL) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(kclass == MFU_KCLASS_GEMM); /* untouched */
}

/* ---- the timeline ------------------------------------------------------ */

#define G MFU_KCLASS_GEMM
#define E MFU_KCLASS_ELEMENTWISE
#define M MFU_KCLASS_MEMORY
#define C MFU_KCLASS_COMMUNICATION
#define R MFU_KCLASS_REDUCTION

static void test_two_streams_by_hand(void)
{
    /* stream 0: gemm [10, 40), elementwise [50, 60), gemm [70, 100)
     * stream 1: communication [30, 80), memcpy [95, 120)
     * window [0, 130):
     *   [0, 10) idle 10; [10, 30) gemm 20; [30, 40) gemm over comm 10;
     *   [40, 50) comm exposed 10; [50, 60) elementwise over comm 10;
     *   [60, 70) comm 10; [70, 80) gemm over comm 10; [80, 95) gemm 15;
     *   [95, 100) gemm over memcpy 5; [100, 120) memcpy 20; [120, 130) idle 10 */
    mfu_interval iv[] = {
        {10, 40, 0, G}, {50, 60, 0, E}, {70, 100, 0, G}, {30, 80, 1, C}, {95, 120, 1, M},
    };
    mfu_timeline t;
    CHECK(mfu_timeline_split(iv, 5, 2, 0, 130, &t) == MFU_OK);
    CHECK(t.window_ns == 130);
    CHECK(t.time_ns[G] == 20 + 10 + 10 + 15 + 5);  /* 60 */
    CHECK(t.time_ns[E] == 10);
    CHECK(t.time_ns[C] == 10 + 10);               /* exposed: [40, 50) and [60, 70) */
    CHECK(t.time_ns[M] == 20);                    /* [100, 120) */
    CHECK(t.idle_ns == 10 + 10);
    CHECK(t.time_ns[G] + t.time_ns[E] + t.time_ns[C] + t.time_ns[M] + t.idle_ns == 130);
    CHECK(t.active_ns[G] == 30 + 30 && t.active_ns[C] == 50 && t.active_ns[M] == 25);
    CHECK(t.count[G] == 2 && t.count[E] == 1 && t.count[C] == 1 && t.count[M] == 1);
    CHECK(t.time_ns[R] == 0 && t.active_ns[R] == 0 && t.count[R] == 0);
}

static void test_clipping_by_hand(void)
{
    /* window [20, 90): gemm [10, 40) -> [20, 40) 20; comm [30, 120) ->
     * [30, 90), exposed [40, 90) 50; an interval before the window is not
     * counted; idle 0 */
    mfu_interval iv[] = {{10, 40, 0, G}, {30, 120, 1, C}, {0, 15, 0, E}};
    mfu_timeline t;
    CHECK(mfu_timeline_split(iv, 3, 2, 20, 90, &t) == MFU_OK);
    CHECK(t.window_ns == 70 && t.time_ns[G] == 20 && t.time_ns[C] == 50 && t.idle_ns == 0);
    CHECK(t.count[E] == 0 && t.active_ns[E] == 0 && t.count[G] == 1);
}

static void test_host_nesting_by_hand(void)
{
    /* one thread: aten::linear (gemm) [0, 100) holds aten::addmm (gemm)
     * [10, 90), which holds aten::copy_ (memory) [20, 30); then
     * aten::gelu (elementwise) [100, 130); aten::add_ [150, 160).
     * Self times: gemm 100 - 10 = 90, memory 10, elementwise 30 + 10,
     * idle [130, 150) 20 + [160, 170) 10. */
    mfu_interval iv[] = {
        {100, 130, 0, E}, {0, 100, 0, G}, {20, 30, 0, M}, {10, 90, 0, G}, {150, 160, 0, E},
    };
    mfu_timeline t;
    CHECK(mfu_timeline_split(iv, 5, 1, 0, 170, &t) == MFU_OK);
    CHECK(t.time_ns[G] == 90 && t.time_ns[M] == 10 && t.time_ns[E] == 40 && t.idle_ns == 30);
    /* on one lane the innermost interval wins, whatever its priority */
    CHECK(t.active_ns[G] == 90 && t.active_ns[M] == 10);
    CHECK(t.count[G] == 2);
}

static void test_improper_nesting_and_ties(void)
{
    /* one lane: A gemm [0, 50), B elementwise [20, 80) (starts inside A,
     * ends after it): B is current from 20 on, A never again:
     * gemm 20, elementwise 60. Identical intervals on one lane: the class
     * first in priority is current. */
    mfu_interval iv[] = {{0, 50, 0, G}, {20, 80, 0, E}, {100, 110, 0, M}, {100, 110, 0, R}};
    mfu_timeline t;
    CHECK(mfu_timeline_split(iv, 4, 1, 0, 110, &t) == MFU_OK);
    CHECK(t.time_ns[G] == 20 && t.time_ns[E] == 60 && t.time_ns[R] == 10 && t.time_ns[M] == 0);
    CHECK(t.idle_ns == 20);
}

static void test_timeline_errors(void)
{
    mfu_timeline t = {.window_ns = -7};
    mfu_interval bad_end[] = {{10, 5, 0, G}};
    mfu_interval bad_lane[] = {{0, 5, 2, G}};
    mfu_interval bad_class[] = {{0, 5, 0, MFU_KCLASS_COUNT}};
    mfu_interval neg_class[] = {{0, 5, 0, -1}};
    mfu_interval mixed[] = {{0, 5, 0, G}, {3, 3, 0, E}, {6, 4, 0, G}, {0, 1, 5, G}};
    CHECK(mfu_timeline_first_invalid(mixed, 4, 1) == 2);
    CHECK(mfu_timeline_first_invalid(mixed, 2, 1) == 2);
    CHECK(mfu_timeline_first_invalid(NULL, 0, 1) == 0);
    CHECK(mfu_timeline_split(bad_end, 1, 1, 0, 10, &t) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_timeline_split(bad_lane, 1, 2, 0, 10, &t) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_timeline_split(bad_class, 1, 1, 0, 10, &t) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_timeline_split(neg_class, 1, 1, 0, 10, &t) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_timeline_split(NULL, 1, 1, 0, 10, &t) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_timeline_split(NULL, 0, 0, 0, 10, &t) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_timeline_split(NULL, 0, MFU_TIMELINE_LANES_MAX + 1, 0, 10, &t)
          == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_timeline_split(NULL, 0, 1, 10, 0, &t) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_timeline_split(NULL, 0, 1, 0, 10, NULL) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_timeline_split(NULL, 0, 1, INT64_MIN, INT64_MAX, &t) == MFU_ERR_OVERFLOW);
    CHECK(t.window_ns == -7); /* untouched on error */
    /* empty: the whole window idle */
    CHECK(mfu_timeline_split(NULL, 0, 1, 5, 15, &t) == MFU_OK);
    CHECK(t.window_ns == 10 && t.idle_ns == 10);
}

/* ---- against a brute force ---------------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint32_t rng(uint32_t n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state % n);
}

/* timeline.h's rule at one nanosecond: each lane's current interval (the
 * covering one that started last; ties: shorter; then first in priority),
 * the instant to the lanes' first class. */
static void brute_force(const mfu_interval *iv, size_t n, int lanes, int64_t w0, int64_t w1,
                        mfu_timeline *t)
{
    memset(t, 0, sizeof *t);
    t->window_ns = w1 - w0;
    for (size_t i = 0; i < n; i++)
        if ((iv[i].end_ns < w1 ? iv[i].end_ns : w1) > (iv[i].start_ns > w0 ? iv[i].start_ns : w0))
            t->count[iv[i].kclass]++; /* non-empty once clipped */
    for (int64_t at = w0; at < w1; at++) {
        int present[MFU_KCLASS_COUNT] = {0};
        for (int lane = 0; lane < lanes; lane++) {
            const mfu_interval *cur = NULL;
            for (size_t i = 0; i < n; i++) {
                const mfu_interval *x = &iv[i];
                if (x->lane != lane || x->start_ns > at || x->end_ns <= at)
                    continue;
                if (cur == NULL || x->start_ns > cur->start_ns
                    || (x->start_ns == cur->start_ns
                        && (x->end_ns < cur->end_ns
                            || (x->end_ns == cur->end_ns && x->kclass < cur->kclass))))
                    cur = x;
            }
            if (cur != NULL)
                present[cur->kclass] = 1;
        }
        int won = 0;
        for (int c = 0; c < MFU_KCLASS_COUNT; c++) {
            if (present[c]) {
                t->active_ns[c]++;
                if (!won)
                    t->time_ns[c]++;
                won = 1;
            }
        }
        if (!won)
            t->idle_ns++;
    }
}

static void test_random_against_brute_force(void)
{
    enum { ROUNDS = 3000, MAX_N = 24 };
    mfu_interval iv[MAX_N], copy[MAX_N];
    int mismatches = 0;
    for (int round = 0; round < ROUNDS; round++) {
        size_t n = rng(MAX_N + 1);
        int lanes = 1 + (int)rng(4);
        for (size_t i = 0; i < n; i++) {
            int64_t start = rng(90), length = rng(4) == 0 ? 0 : 1 + rng(40);
            iv[i] = (mfu_interval){start, start + length, (int32_t)rng((uint32_t)lanes),
                                   (int32_t)rng(MFU_KCLASS_COUNT)};
        }
        int64_t w0 = rng(20), w1 = w0 + rng(100);
        mfu_timeline want, got;
        brute_force(iv, n, lanes, w0, w1, &want);
        memcpy(copy, iv, sizeof iv);
        if (!CHECK(mfu_timeline_split(copy, n, lanes, w0, w1, &got) == MFU_OK))
            continue;
        if (memcmp(&want, &got, sizeof want) != 0 && mismatches++ == 0) {
            fprintf(stderr, "round %d: n %zu lanes %d window [%lld, %lld)\n", round, n, lanes,
                    (long long)w0, (long long)w1);
            for (size_t i = 0; i < n; i++)
                fprintf(stderr, "  [%lld, %lld) lane %d class %d\n", (long long)iv[i].start_ns,
                        (long long)iv[i].end_ns, iv[i].lane, iv[i].kclass);
            fprintf(stderr, "  idle want %lld got %lld\n", (long long)want.idle_ns,
                    (long long)got.idle_ns);
            for (int c = 0; c < MFU_KCLASS_COUNT; c++)
                fprintf(stderr, "  class %d time %lld/%lld active %lld/%lld count %lld/%lld\n", c,
                        (long long)want.time_ns[c], (long long)got.time_ns[c],
                        (long long)want.active_ns[c], (long long)got.active_ns[c],
                        (long long)want.count[c], (long long)got.count[c]);
        }
    }
    CHECK(mismatches == 0);
}

int main(void)
{
    test_rows();
    test_kernel_names();
    test_op_names();
    test_annotations();
    test_errors();
    test_two_streams_by_hand();
    test_clipping_by_hand();
    test_host_nesting_by_hand();
    test_improper_nesting_and_ties();
    test_timeline_errors();
    test_random_against_brute_force();
    return check_summary("test_kernels");
}
