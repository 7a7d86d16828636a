/*
 * kernels.c -- the kernel class table (kernels.h) and its matcher.
 *
 * One row per name rule, first match wins, each with where the name can be
 * read: PyTorch's sources (the kernel or op that carries it), the trace
 * tools that classify the same names (HTA, TraceLens), or the library that
 * emits it. The names are facts of public traces; the tests
 * (tests/c/test_kernels.c, tests/test_kernels.py) check real CUDA and ROCm
 * names against this table.
 */
#include <string.h>

#include "kernels.h"
#include "ops.h"

#define K MFU_KSOURCE_KERNEL
#define O MFU_KSOURCE_OP
#define A MFU_KSOURCE_ANNOTATION

#define ROW(pattern_, match_, sources_, class_, source_)                       \
    {.pattern = pattern_, .match = MFU_KMATCH_##match_, .sources = (sources_),  \
     .kclass = MFU_KCLASS_##class_, .scope = 0, .source = source_}
#define SCOPE(pattern_, match_, sources_, class_, source_)                     \
    {.pattern = pattern_, .match = MFU_KMATCH_##match_, .sources = (sources_),  \
     .kclass = MFU_KCLASS_##class_, .scope = 1, .source = source_}

#define ATEN_OPS "aten/src/ATen/native/native_functions.yaml (the op's name)"
#define CUDA_LOOPS "aten/src/ATen/native/cuda/CUDALoops.cuh (elementwise_kernel, " \
                   "vectorized_ / unrolled_elementwise_kernel)"
#define INDUCTOR_TRITON "torch/_inductor/codegen/triton.py: kernels are named triton_" \
                        "<category[:3]>_<fused ops>_<n> (wrapper_benchmark.py categories)"

static const mfu_krule rules[] = {
    /* ---- communication ------------------------------------------------- */
    ROW("nccl", PREFIX, K, COMMUNICATION,
        "NCCL / RCCL device kernels: ncclDevKernel_* (NCCL >= 2.19), ncclKernel_*; "
        "HTA hta/utils/utils.py is_comm_kernel"),
    ROW("rccl", PREFIX, K, COMMUNICATION, "RCCL's own kernel names (TraceLens classify_kernels)"),
    ROW("nccl:", PREFIX, O, COMMUNICATION,
        "c10d ProcessGroupNCCL's profiling title nccl:<collective>"),
    ROW("gloo:", PREFIX, O, COMMUNICATION,
        "c10d ProcessGroupGloo's profiling title gloo:<collective>"),
    ROW("c10d::", PREFIX, O, COMMUNICATION, "the c10d operators (csrc/core/comm/comm.c's table)"),
    ROW("record_param_comms", EXACT, O, COMMUNICATION,
        "torch/csrc/distributed/c10d/ParamCommsUtils.hpp RECORD_PARAM_COMMS"),

    /* ---- memory copies and sets ----------------------------------------- */
    ROW("Memcpy", PREFIX, K, MEMORY,
        "Kineto's memcpy activities (Memcpy HtoD (Pageable -> Device), CUPTI and "
        "roctracer); HTA is_memory_kernel"),
    ROW("Memset", PREFIX, K, MEMORY, "Kineto's memset activities; HTA is_memory_kernel"),
    ROW("__amd_rocclr_copyBuffer", PREFIX, K, MEMORY,
        "ROCclr's blit kernels in ROCm traces (TraceLens classify_kernels)"),
    ROW("__amd_rocclr_fillBuffer", PREFIX, K, MEMORY, "ROCclr's fill kernels in ROCm traces"),
    ROW("direct_copy_kernel", CONTAINS, K, MEMORY,
        "aten/src/ATen/native/cuda/Copy.cu direct_copy_kernel_cuda (in the name of "
        "the elementwise kernel that runs it)"),
    ROW("CatArrayBatchedCopy", CONTAINS, K, MEMORY, "aten/src/ATen/native/cuda/Shape.cu"),
    ROW("FillFunctor", CONTAINS, K, MEMORY, "aten/src/ATen/native/cuda/FillKernel.cu"),
    ROW("aten::copy", EXACT, O, MEMORY, ATEN_OPS),
    ROW("aten::_copy_from", EXACT, O, MEMORY, ATEN_OPS),
    ROW("aten::_copy_from_and_resize", EXACT, O, MEMORY, ATEN_OPS),
    ROW("aten::_to_copy", EXACT, O, MEMORY, ATEN_OPS),
    ROW("aten::clone", EXACT, O, MEMORY, ATEN_OPS),
    ROW("aten::contiguous", EXACT, O, MEMORY, ATEN_OPS),
    ROW("aten::fill", EXACT, O, MEMORY, ATEN_OPS),
    ROW("aten::zero", EXACT, O, MEMORY, ATEN_OPS),
    ROW("aten::zeros", EXACT, O, MEMORY, ATEN_OPS),
    ROW("aten::zeros_like", EXACT, O, MEMORY, ATEN_OPS),
    ROW("aten::ones", EXACT, O, MEMORY, ATEN_OPS),
    ROW("aten::ones_like", EXACT, O, MEMORY, ATEN_OPS),
    ROW("aten::full", EXACT, O, MEMORY, ATEN_OPS),
    ROW("aten::full_like", EXACT, O, MEMORY, ATEN_OPS),
    ROW("aten::cat", EXACT, O, MEMORY, ATEN_OPS),
    ROW("aten::stack", EXACT, O, MEMORY, ATEN_OPS),

    /* ---- compiled code (inductor) ---------------------------------------- */
    ROW("CompiledFxGraph", CONTAINS, A, FUSED,
        "torch/_inductor/output_code.py: a compiled graph runs under the "
        "record_function '## Call CompiledFxGraph <key> ##'"),
    ROW("cpp_fused_", CONTAINS, O | A, FUSED,
        "torch/_inductor/codegen/cpp.py: C++ kernels cpp_fused_*, profiled as "
        "graph_<n>_cpp_fused_* with config.cpp.enable_kernel_profile"),
    ROW("triton_poi_", PREFIX, K, ELEMENTWISE, INDUCTOR_TRITON " (pointwise)"),
    ROW("triton_red_", PREFIX, K, REDUCTION, INDUCTOR_TRITON " (reduction)"),
    ROW("triton_per_", PREFIX, K, REDUCTION, INDUCTOR_TRITON " (persistent_reduction)"),
    ROW("triton_spl_", PREFIX, K, REDUCTION, INDUCTOR_TRITON " (split_scan)"),
    ROW("triton_for_", PREFIX, K, OPTIMIZER,
        INDUCTOR_TRITON " (foreach: a compiled optimizer's combo kernels)"),

    /* ---- attention (before GEMM: CUTLASS- and wgmma-based kernels) ------- */
    ROW("flex_attention", CONTAINS, K | O, ATTENTION,
        "torch/nn/attention/flex_attention.py (the higher-order op and its "
        "templates)"),
    ROW("flash", CONTAINS_NOCASE, K | O, ATTENTION,
        "flash-attn 2 (flash_fwd_kernel, flash_bwd_*), PyTorch's copy "
        "(pytorch_flash::flash_fwd_kernel), FlashAttention-3 (flash::FlashAttnFwdSm90); "
        "TraceLens classify_kernels 'flash_attn|flash_fwd'"),
    ROW("fmha", CONTAINS_NOCASE, K | O, ATTENTION,
        "PyTorch's mem-efficient attention (fmha_cutlassF_*, fmha_cutlassB_*, "
        "aten/src/ATen/native/transformers/cuda/mem_eff_attention), CK "
        "ck_tile fmha_fwd on ROCm, NVIDIA fmhaSm100 (TraceLens)"),
    ROW("sdpa", CONTAINS_NOCASE, K, ATTENTION,
        "cuDNN's SDPA engines (cudnn_generated_fort_native_sdpa_sm90_flash_fprop_*)"),
    ROW("scaled_dot_product", CONTAINS, O, ATTENTION,
        ATEN_OPS " (scaled_dot_product_attention and its kernels)"),
    ROW("attn_fwd", CONTAINS, K, ATTENTION, "Triton's fused-attention tutorial (_attn_fwd)"),
    ROW("attn_bwd", CONTAINS, K, ATTENTION, "Triton's fused-attention tutorial (_attn_bwd)"),
    ROW("attention", CONTAINS_NOCASE, K | O, ATTENTION,
        "paged / unified attention kernels (TraceLens classify_kernels)"),

    /* ---- GEMM ------------------------------------------------------------ */
    ROW("triton_tem_", PREFIX, K, GEMM,
        INDUCTOR_TRITON " (template: mm / bmm / addmm autotuned)"),
    ROW("nvjet", PREFIX, K, GEMM,
        "cuBLASLt's Hopper / Blackwell GEMMs (nvjet_tst_*, nvjet_hsh_*; TraceLens "
        "classify_kernels)"),
    ROW("Cijk_", PREFIX, K, GEMM,
        "hipBLASLt / Tensile GEMMs on ROCm (Cijk_Ailk_Bljk_*; TraceLens classify_kernels)"),
    ROW("gemm", CONTAINS_NOCASE, K, GEMM,
        "cuBLAS (ampere_sgemm_*, sm80_xmma_gemm_*), CUTLASS (*tensorop_*gemm*), "
        "cuDNN implicit GEMM convolutions, CK (kernel_gemm_xdl_*); TraceLens 'gemm'"),
    ROW("splitKreduce", CONTAINS, K, GEMM, "cuBLAS's split-K reduction (TraceLens)"),
    ROW("cutlass", CONTAINS_NOCASE, K, GEMM, "CUTLASS kernels (cutlass::Kernel2<cutlass_80_*>)"),
    ROW("wgmma", CONTAINS_NOCASE, K, GEMM, "Hopper warpgroup MMA kernels"),
    ROW("matmul", CONTAINS_NOCASE, K | O, GEMM,
        "Triton matmul kernels (matmul_kernel, _matmul_ogs_*), aten::matmul"),
    ROW("aten::linear", EXACT, O, GEMM, ATEN_OPS),
    ROW("aten::mv", EXACT, O, GEMM, ATEN_OPS),
    ROW("aten::dot", EXACT, O, GEMM, ATEN_OPS),
    ROW("aten::vdot", EXACT, O, GEMM, ATEN_OPS),
    ROW("aten::addmv", EXACT, O, GEMM, ATEN_OPS),
    ROW("aten::addbmm", EXACT, O, GEMM, ATEN_OPS),
    ROW("aten::einsum", EXACT, O, GEMM, ATEN_OPS),
    ROW("aten::_addmm_activation", EXACT, O, GEMM, ATEN_OPS),
    ROW("aten::mkldnn_linear", EXACT, O, GEMM, ATEN_OPS),
    ROW("aten::_mkl_linear", EXACT, O, GEMM, ATEN_OPS),
    ROW("aten::conv", PREFIX, O, GEMM, ATEN_OPS " (conv1d .. conv3d, conv_transpose*)"),
    ROW("aten::mkldnn_convolution", EXACT, O, GEMM, ATEN_OPS),

    /* ---- reduction and normalization ------------------------------------- */
    ROW("softmax", CONTAINS_NOCASE, K | O, REDUCTION,
        "aten/src/ATen/native/cuda/SoftMax.cu (cunn_SoftMaxForward, "
        "softmax_warp_forward), aten::_softmax / _log_softmax"),
    ROW("layer_norm", CONTAINS_NOCASE, K | O, REDUCTION,
        "aten/src/ATen/native/cuda/layer_norm_kernel.cu (vectorized_layer_norm_kernel, "
        "layer_norm_grad_input_kernel), Liger's _layer_norm_forward_kernel"),
    ROW("layernorm", CONTAINS_NOCASE, K, REDUCTION, "Apex / TE LayerNorm kernels (TraceLens)"),
    ROW("GammaBetaBackward", CONTAINS, K, REDUCTION, "aten layer_norm_kernel.cu (weight grads)"),
    ROW("rms_norm", CONTAINS_NOCASE, K | O, REDUCTION,
        "aten::rms_norm / _fused_rms_norm, Liger's _rms_norm_forward_kernel"),
    ROW("rmsnorm", CONTAINS_NOCASE, K, REDUCTION, "RMSNorm kernels (TraceLens classify_kernels)"),
    ROW("group_norm", CONTAINS_NOCASE, K | O, REDUCTION, ATEN_OPS " (native_group_norm)"),
    ROW("batch_norm", CONTAINS_NOCASE, K | O, REDUCTION, ATEN_OPS " (native_batch_norm)"),
    ROW("cross_entropy", CONTAINS_NOCASE, K | O, REDUCTION,
        "aten::cross_entropy_loss, Liger's _cross_entropy_kernel"),
    ROW("nll_loss", CONTAINS, K | O, REDUCTION, ATEN_OPS " (nll_loss_forward, NLLLoss.cu)"),
    ROW("reduce_kernel", CONTAINS, K, REDUCTION,
        "aten/src/ATen/native/cuda/Reduce.cuh (sum, mean, max, norm, ...)"),
    ROW("aten::sum", EXACT, O, REDUCTION, ATEN_OPS),
    ROW("aten::mean", EXACT, O, REDUCTION, ATEN_OPS),
    ROW("aten::prod", EXACT, O, REDUCTION, ATEN_OPS),
    ROW("aten::max", EXACT, O, REDUCTION, ATEN_OPS),
    ROW("aten::min", EXACT, O, REDUCTION, ATEN_OPS),
    ROW("aten::amax", EXACT, O, REDUCTION, ATEN_OPS),
    ROW("aten::amin", EXACT, O, REDUCTION, ATEN_OPS),
    ROW("aten::argmax", EXACT, O, REDUCTION, ATEN_OPS),
    ROW("aten::argmin", EXACT, O, REDUCTION, ATEN_OPS),
    ROW("aten::var", EXACT, O, REDUCTION, ATEN_OPS),
    ROW("aten::std", EXACT, O, REDUCTION, ATEN_OPS),
    ROW("aten::var_mean", EXACT, O, REDUCTION, ATEN_OPS),
    ROW("aten::norm", EXACT, O, REDUCTION, ATEN_OPS),
    ROW("aten::linalg_vector_norm", EXACT, O, REDUCTION, ATEN_OPS),
    ROW("aten::logsumexp", EXACT, O, REDUCTION, ATEN_OPS),
    ROW("aten::cumsum", EXACT, O, REDUCTION, ATEN_OPS),
    ROW("aten::all", EXACT, O, REDUCTION, ATEN_OPS),
    ROW("aten::any", EXACT, O, REDUCTION, ATEN_OPS),
    ROW("aten::topk", EXACT, O, REDUCTION, ATEN_OPS),
    ROW("aten::sort", EXACT, O, REDUCTION, ATEN_OPS),
    ROW("aten::mse_loss", EXACT, O, REDUCTION, ATEN_OPS),

    /* ---- optimizer ------------------------------------------------------- */
    SCOPE("Optimizer.step#", PREFIX, A, OPTIMIZER,
          "torch/optim/optimizer.py: every optimizer's step runs under "
          "record_function('Optimizer.step#<Class>.step')"),
    SCOPE("Optimizer.zero_grad#", PREFIX, A, OPTIMIZER,
          "torch/optim/optimizer.py: record_function('Optimizer.zero_grad#<Class>.zero_grad')"),
    ROW("multi_tensor_apply", CONTAINS, K, OPTIMIZER,
        "aten/src/ATen/native/cuda/MultiTensorApply.cuh (foreach and fused "
        "optimizers), Apex / DeepSpeed multi_tensor_apply_kernel"),
    ROW("fused_adam", CONTAINS_NOCASE, K | O, OPTIMIZER,
        "aten::_fused_adam_ / _fused_adamw_ (FusedAdamKernel.cu), Apex FusedAdam"),
    ROW("fused_sgd", CONTAINS_NOCASE, K | O, OPTIMIZER, ATEN_OPS " (_fused_sgd_)"),
    ROW("fused_adagrad", CONTAINS_NOCASE, K | O, OPTIMIZER, ATEN_OPS " (_fused_adagrad_)"),
    ROW("aten::_foreach_", PREFIX, O, OPTIMIZER, ATEN_OPS " (the foreach ops optimizers use)"),

    /* ---- elementwise ----------------------------------------------------- */
    ROW("elementwise_kernel", CONTAINS, K, ELEMENTWISE, CUDA_LOOPS),
    ROW("elementwise", CONTAINS_NOCASE, K, ELEMENTWISE,
        "other pointwise kernels (TraceLens classify_kernels 'elementwise')"),
    ROW("aten::add", EXACT, O, ELEMENTWISE, ATEN_OPS),
    ROW("aten::sub", EXACT, O, ELEMENTWISE, ATEN_OPS),
    ROW("aten::rsub", EXACT, O, ELEMENTWISE, ATEN_OPS),
    ROW("aten::mul", EXACT, O, ELEMENTWISE, ATEN_OPS),
    ROW("aten::div", EXACT, O, ELEMENTWISE, ATEN_OPS),
    ROW("aten::pow", EXACT, O, ELEMENTWISE, ATEN_OPS),
    ROW("aten::neg", EXACT, O, ELEMENTWISE, ATEN_OPS),
    ROW("aten::abs", EXACT, O, ELEMENTWISE, ATEN_OPS),
    ROW("aten::exp", EXACT, O, ELEMENTWISE, ATEN_OPS),
    ROW("aten::log", EXACT, O, ELEMENTWISE, ATEN_OPS),
    ROW("aten::sqrt", EXACT, O, ELEMENTWISE, ATEN_OPS),
    ROW("aten::rsqrt", EXACT, O, ELEMENTWISE, ATEN_OPS),
    ROW("aten::reciprocal", EXACT, O, ELEMENTWISE, ATEN_OPS),
    ROW("aten::sin", EXACT, O, ELEMENTWISE, ATEN_OPS),
    ROW("aten::cos", EXACT, O, ELEMENTWISE, ATEN_OPS),
    ROW("aten::tanh", EXACT, O, ELEMENTWISE, ATEN_OPS),
    ROW("aten::sigmoid", EXACT, O, ELEMENTWISE, ATEN_OPS),
    ROW("aten::gelu", EXACT, O, ELEMENTWISE, ATEN_OPS),
    ROW("aten::silu", EXACT, O, ELEMENTWISE, ATEN_OPS),
    ROW("aten::relu", EXACT, O, ELEMENTWISE, ATEN_OPS),
    ROW("aten::threshold", EXACT, O, ELEMENTWISE, ATEN_OPS),
    ROW("aten::clamp", EXACT, O, ELEMENTWISE, ATEN_OPS),
    ROW("aten::clamp_min", EXACT, O, ELEMENTWISE, ATEN_OPS),
    ROW("aten::where", EXACT, O, ELEMENTWISE, ATEN_OPS),
    ROW("aten::masked_fill", EXACT, O, ELEMENTWISE, ATEN_OPS),
    ROW("aten::addcmul", EXACT, O, ELEMENTWISE, ATEN_OPS),
    ROW("aten::addcdiv", EXACT, O, ELEMENTWISE, ATEN_OPS),
    ROW("aten::lerp", EXACT, O, ELEMENTWISE, ATEN_OPS),
    ROW("aten::maximum", EXACT, O, ELEMENTWISE, ATEN_OPS),
    ROW("aten::minimum", EXACT, O, ELEMENTWISE, ATEN_OPS),
    ROW("aten::eq", EXACT, O, ELEMENTWISE, ATEN_OPS),
    ROW("aten::ne", EXACT, O, ELEMENTWISE, ATEN_OPS),
    ROW("aten::lt", EXACT, O, ELEMENTWISE, ATEN_OPS),
    ROW("aten::le", EXACT, O, ELEMENTWISE, ATEN_OPS),
    ROW("aten::gt", EXACT, O, ELEMENTWISE, ATEN_OPS),
    ROW("aten::ge", EXACT, O, ELEMENTWISE, ATEN_OPS),
    ROW("aten::native_dropout", EXACT, O, ELEMENTWISE, ATEN_OPS),
    ROW("aten::dropout", EXACT, O, ELEMENTWISE, ATEN_OPS),
    ROW("aten::bernoulli", EXACT, O, ELEMENTWISE, ATEN_OPS),
    ROW("aten::embedding", EXACT, O, ELEMENTWISE, ATEN_OPS " (a gather)"),
    ROW("aten::embedding_dense", EXACT, O, ELEMENTWISE,
        ATEN_OPS " (embedding_dense_backward: a scatter-add)"),
    ROW("aten::index", EXACT, O, ELEMENTWISE, ATEN_OPS),
    ROW("aten::index_select", EXACT, O, ELEMENTWISE, ATEN_OPS),
    ROW("aten::gather", EXACT, O, ELEMENTWISE, ATEN_OPS),
    ROW("aten::scatter", EXACT, O, ELEMENTWISE, ATEN_OPS),
    ROW("aten::index_put", EXACT, O, ELEMENTWISE, ATEN_OPS),
    ROW("aten::index_add", EXACT, O, ELEMENTWISE, ATEN_OPS),
    ROW("aten::triu", EXACT, O, ELEMENTWISE, ATEN_OPS),
    ROW("aten::tril", EXACT, O, ELEMENTWISE, ATEN_OPS),
};

#undef ROW
#undef SCOPE

static const char *const class_names[MFU_KCLASS_COUNT] = {
    [MFU_KCLASS_GEMM] = "gemm",
    [MFU_KCLASS_ATTENTION] = "attention",
    [MFU_KCLASS_FUSED] = "fused",
    [MFU_KCLASS_REDUCTION] = "reduction",
    [MFU_KCLASS_ELEMENTWISE] = "elementwise",
    [MFU_KCLASS_OPTIMIZER] = "optimizer",
    [MFU_KCLASS_OTHER] = "other",
    [MFU_KCLASS_MEMORY] = "memory",
    [MFU_KCLASS_COMMUNICATION] = "communication",
};

const char *mfu_kclass_name(mfu_kclass kclass)
{
    return (unsigned)kclass < MFU_KCLASS_COUNT ? class_names[kclass] : NULL;
}

size_t mfu_krule_count(void)
{
    return sizeof rules / sizeof rules[0];
}

const mfu_krule *mfu_krule_get(size_t i)
{
    return i < mfu_krule_count() ? &rules[i] : NULL;
}

static int lower(int c)
{
    return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c;
}

/* Whether `pattern` occurs in name[0 .. len). */
static int contains(const char *name, size_t len, const char *pattern, int nocase)
{
    size_t plen = strlen(pattern);
    for (size_t at = 0; plen <= len && at <= len - plen; at++) {
        size_t i = 0;
        while (i < plen && (nocase ? lower((unsigned char)name[at + i]) == lower((unsigned char)pattern[i])
                                   : name[at + i] == pattern[i]))
            i++;
        if (i == plen)
            return 1;
    }
    return 0;
}

static int rule_matches(const mfu_krule *rule, const char *name, size_t len)
{
    size_t plen = strlen(rule->pattern);
    switch (rule->match) {
    case MFU_KMATCH_EXACT:
        return len == plen && memcmp(name, rule->pattern, plen) == 0;
    case MFU_KMATCH_PREFIX:
        return len >= plen && memcmp(name, rule->pattern, plen) == 0;
    case MFU_KMATCH_CONTAINS:
        return contains(name, len, rule->pattern, 0);
    case MFU_KMATCH_CONTAINS_NOCASE:
        return contains(name, len, rule->pattern, 1);
    }
    return 0;
}

/* The length of an OP name without its in-place "_" and then its
 * "_backward_data" / "_backward" suffix (kernels.h, "Matching"). */
static size_t op_name_length(const char *name)
{
    static const char *const suffixes[] = {"_backward_data", "_backward"};
    size_t len = strlen(name);
    if (len > 1 && name[len - 1] == '_')
        len--;
    for (size_t s = 0; s < sizeof suffixes / sizeof suffixes[0]; s++) {
        size_t slen = strlen(suffixes[s]);
        if (len > slen && memcmp(name + len - slen, suffixes[s], slen) == 0)
            return len - slen;
    }
    return len;
}

static mfu_kclass op_table_class(const char *name)
{
    const mfu_op_spec *spec = mfu_op_find(name);
    if (spec == NULL)
        return MFU_KCLASS_NONE;
    return spec->kind == MFU_OP_ATTENTION || spec->kind == MFU_OP_ATTENTION_BACKWARD
               ? MFU_KCLASS_ATTENTION
               : MFU_KCLASS_GEMM;
}

mfu_status mfu_kclass_of(const char *name, unsigned source, mfu_kclass *kclass, int *scope,
                         size_t *rule)
{
    if (name == NULL || kclass == NULL
        || (source != MFU_KSOURCE_KERNEL && source != MFU_KSOURCE_OP
            && source != MFU_KSOURCE_ANNOTATION))
        return MFU_ERR_INVALID_ARGUMENT;
    mfu_kclass found = source == MFU_KSOURCE_OP ? op_table_class(name) : MFU_KCLASS_NONE;
    size_t index = MFU_KRULE_OP_TABLE;
    int found_scope = 0;
    if (found == MFU_KCLASS_NONE) {
        size_t len = source == MFU_KSOURCE_OP ? op_name_length(name) : strlen(name);
        index = MFU_KRULE_DEFAULT;
        found = source == MFU_KSOURCE_ANNOTATION ? MFU_KCLASS_NONE : MFU_KCLASS_OTHER;
        for (size_t i = 0; i < mfu_krule_count(); i++) {
            if ((rules[i].sources & source) && rule_matches(&rules[i], name, len)) {
                found = rules[i].kclass;
                found_scope = rules[i].scope;
                index = i;
                break;
            }
        }
    }
    *kclass = found;
    if (scope != NULL)
        *scope = found_scope;
    if (rule != NULL)
        *rule = index;
    return MFU_OK;
}
