/*
 * gpu_table.c -- the dense peak table (conventions in gpu_table.h).
 *
 * Two parts: first one peaks constant per chip or SKU, with the datasheet
 * it came from and the arithmetic that turns the datasheet's figures into
 * dense TFLOP/s; then the rows, one per device, each pointing at its
 * peaks and its datasheet. "sparse / 2" marks a figure the datasheet prints
 * only with 2:4 sparsity.
 */
#include "gpu_table.h"

#include <string.h>

/* Datasheet gigabytes are decimal. */
#define GB 1000000000ULL

/* ======================= datasheets and their peaks ======================= */

/* ---- NVIDIA Pascal: GP100 ---- */
/* Tesla P100 datasheets: SXM2 (NVLink) 5.3 FP64, 10.6 FP32, 21.2 FP16;
 * PCIe 4.7 FP64, 9.3 FP32, 18.7 FP16. 56 SMs of 64 FP32 cores (Pascal
 * whitepaper): 56 x 64 x 2 x 1480 MHz = 10.6 TFLOP/s (SXM2), at 1303 MHz
 * = 9.3 (PCIe). HBM2: 16 GB at 732 GB/s, or (PCIe) 12 GB at 549 GB/s.
 * Pascal has no tensor cores: fp16 is the datasheet's half-precision
 * (FP16x2) peak; a GEMM with FP32 accumulate (PyTorch's default) runs at
 * the FP32 rate. No BF16, TF32 or INT8 figure. */
static const char src_p100_sxm2[] =
    "NVIDIA Tesla P100 datasheet (SXM2), https://images.nvidia.com/content/tesla/pdf/nvidia-tesla-p100-datasheet.pdf";
static const char src_p100_pcie[] =
    "NVIDIA Tesla P100 PCIe datasheet, https://images.nvidia.com/content/tesla/pdf/nvidia-tesla-p100-PCIe-datasheet.pdf";
static const mfu_dense_tflops peaks_p100_sxm2 = {
    .fp64 = 5.3, .fp32 = 10.6, .fp16 = 21.2};
static const mfu_dense_tflops peaks_p100_pcie = {
    .fp64 = 4.7, .fp32 = 9.3, .fp16 = 18.7};

/* ---- NVIDIA Volta: GV100 ---- */
/* V100 datasheet: SXM2 7.8 FP64 (vector; Volta has no FP64 tensor),
 * 15.7 FP32, 125 tensor (FP16 in, FP32 accumulate), boost 1530 MHz; PCIe
 * 7 FP64, 14 FP32, 112 tensor, 1380 MHz. 900 GB/s, 16 GB and 32 GB share
 * every peak. No INT8/BF16/TF32 figure. */
static const char src_v100[] =
    "NVIDIA Tesla V100 datasheet, https://images.nvidia.com/content/technologies/volta/pdf/volta-v100-datasheet-update-us-1165301-r5.pdf";
static const mfu_dense_tflops peaks_v100_sxm2 = {
    .fp64 = 7.8, .fp32 = 15.7, .fp16 = 125.0};
static const mfu_dense_tflops peaks_v100_pcie = {
    .fp64 = 7.0, .fp32 = 14.0, .fp16 = 112.0};
/* Same datasheet, V100S PCIe: 8.2 FP64, 16.4 FP32, 130 tensor, 32 GB HBM2,
 * 1,134 GB/s. 80 SMs at 1601 MHz: 80 x 64 x 2 x 1.601e9 = 16.4 TFLOP/s. */
static const mfu_dense_tflops peaks_v100s_pcie = {
    .fp64 = 8.2, .fp32 = 16.4, .fp16 = 130.0};

/* ---- NVIDIA Turing: TU104 ---- */
/* T4 datasheet: 8.1 FP32, 65 mixed FP16/FP32, 130 INT8, 260 INT4 TOPS,
 * 16 GB GDDR6, 320 GB/s. No FP64 or boost clock in the datasheet. */
static const char src_t4[] =
    "NVIDIA T4 Tensor Core GPU datasheet, https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/tesla-t4/t4-tensor-core-datasheet-951643.pdf";
static const mfu_dense_tflops peaks_t4 = {
    .fp32 = 8.1, .fp16 = 65.0, .int8 = 130.0, .int4 = 260.0};

/* ---- NVIDIA Ampere: GA100 ---- */
/* A100 datasheet: 19.5 FP64 tensor (9.7 vector), 19.5 FP32, TF32 156,
 * BF16/FP16 312, INT8 624, INT4 1248 (A100 whitepaper), boost 1410 MHz.
 * Bandwidth: 40GB 1,555 GB/s; 80GB SXM 2,039 GB/s; 80GB PCIe 1,935 GB/s.
 * A800 datasheet: the A100's GA100 with NVLink cut to 400 GB/s; every
 * compute peak and the memory bandwidths are the A100's. */
static const char src_a100[] =
    "NVIDIA A100 Tensor Core GPU datasheet, https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf";
static const char src_a800[] =
    "NVIDIA A800 Tensor Core GPU datasheet, https://www.nvidia.cn/data-center/a800/";
static const mfu_dense_tflops peaks_ga100 = {
    .fp64 = 19.5, .fp32 = 19.5, .tf32 = 156.0, .fp16 = 312.0, .bf16 = 312.0,
    .int8 = 624.0, .int4 = 1248.0};
/* A30 datasheet: FP64 5.2 (tensor 10.3), FP32 10.3, TF32 82 | 165*,
 * BF16/FP16 165 | 330*, INT8 330 | 661*, INT4 661 | 1321* (* sparse),
 * 24 GB HBM2, 933 GB/s. 56 SMs (a GA100 with 56 of its SMs): 56 x 2048
 * FLOP/clock x 1440 MHz = 165.2 TFLOP/s FP16, the A100's 108 x 2048 x
 * 1410 MHz = 311.9 at its own size and clock. */
static const char src_a30[] =
    "NVIDIA A30 Tensor Core GPU datasheet, https://www.nvidia.com/content/dam/en-zz/Solutions/data-center/products/a30-gpu/pdf/a30-datasheet.pdf";
static const mfu_dense_tflops peaks_a30 = {
    .fp64 = 10.3, .fp32 = 10.3, .tf32 = 82.0, .fp16 = 165.0, .bf16 = 165.0,
    .int8 = 330.0, .int4 = 661.0};

/* ---- NVIDIA Ampere: GA102 ---- */
/* A10 datasheet: 31.2 FP32, TF32 62.5, BF16/FP16 125, INT8 250, INT4 500
 * (dense; the datasheet's sparse figures are twice these), 24 GB GDDR6,
 * 600 GB/s. No FP64 figure. */
static const char src_a10[] =
    "NVIDIA A10 Tensor Core GPU datasheet, https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a10/pdf/a10-datasheet.pdf";
static const mfu_dense_tflops peaks_a10 = {
    .fp32 = 31.2, .tf32 = 62.5, .fp16 = 125.0, .bf16 = 125.0, .int8 = 250.0,
    .int4 = 500.0};
/* A10G (AWS EC2 G5 only): AWS documents 24 GB of GPU memory; no public
 * NVIDIA or AWS datasheet gives its peak FLOP/s, SM count or bandwidth, so
 * the row has no peaks. It exists so "A10G" is known as a device of its own
 * and never falls back to the A10's numbers. */
static const char src_a10g[] =
    "Amazon EC2 G5 instances (NVIDIA A10G, 24 GB), https://aws.amazon.com/ec2/instance-types/g5/ -- no public peak-FLOP/s figures";
/* A40 datasheet: 37.4 FP32, TF32 74.8, BF16/FP16 149.7, INT8 299.3,
 * INT4 598.7 (dense), 48 GB GDDR6, 696 GB/s. */
static const char src_a40[] =
    "NVIDIA A40 datasheet, https://images.nvidia.com/content/Solutions/data-center/a40/nvidia-a40-datasheet.pdf";
static const mfu_dense_tflops peaks_a40 = {
    .fp32 = 37.4, .tf32 = 74.8, .fp16 = 149.7, .bf16 = 149.7, .int8 = 299.3,
    .int4 = 598.7};
/* RTX A6000 datasheet: 38.7 FP32, tensor 309.7 with sparsity -> FP16/BF16
 * 309.7 / 2 = 154.8 dense (GA102 whitepaper appendix C), 48 GB GDDR6,
 * 768 GB/s, 84 SMs, boost 1800 MHz. TF32/INT8/INT4 not verified: absent. */
static const char src_a6000[] =
    "NVIDIA RTX A6000 datasheet and NVIDIA Ampere GA102 GPU Architecture whitepaper v2, https://www.nvidia.com/content/PDF/nvidia-ampere-ga-102-gpu-architecture-whitepaper-v2.pdf";
static const mfu_dense_tflops peaks_a6000 = {
    .fp32 = 38.7, .fp16 = 154.8, .bf16 = 154.8};
/* GA102 whitepaper appendix A, GeForce RTX 3090: 35.6 FP32, TF32 35.6,
 * FP16/BF16 tensor with FP32 accumulate 71 (142 sparse), INT8 284,
 * INT4 568, 82 SMs, boost 1695 MHz, 24 GB GDDR6X, 936 GB/s. */
static const char src_3090[] =
    "NVIDIA Ampere GA102 GPU Architecture whitepaper v2 (appendix A), https://www.nvidia.com/content/PDF/nvidia-ampere-ga-102-gpu-architecture-whitepaper-v2.pdf";
static const mfu_dense_tflops peaks_3090 = {
    .fp32 = 35.6, .tf32 = 35.6, .fp16 = 71.0, .bf16 = 71.0, .int8 = 284.0,
    .int4 = 568.0};

/* ---- NVIDIA Ada Lovelace ---- */
/* L4 product page: 30.3 FP32, TF32 120*, BF16/FP16 242*, FP8 485*,
 * INT8 485* (* with sparsity) -> dense 60 / 121 / 242.5 / 242.5,
 * 24 GB GDDR6, 300 GB/s. */
static const char src_l4[] =
    "NVIDIA L4 Tensor Core GPU datasheet, https://www.nvidia.com/en-us/data-center/l4/";
static const mfu_dense_tflops peaks_l4 = {
    .fp32 = 30.3, .tf32 = 60.0, .fp16 = 121.0, .bf16 = 121.0, .fp8 = 242.5,
    .int8 = 242.5};
/* L40 datasheet: 90.5 FP32, TF32 90.5, BF16/FP16 181, FP8 362, INT8 362,
 * INT4 724 (dense; sparse doubles), 48 GB, 864 GB/s. */
static const char src_l40[] =
    "NVIDIA L40 GPU datasheet, https://www.nvidia.com/en-us/data-center/l40/";
static const mfu_dense_tflops peaks_l40 = {
    .fp32 = 90.5, .tf32 = 90.5, .fp16 = 181.0, .bf16 = 181.0, .fp8 = 362.0,
    .int8 = 362.0, .int4 = 724.0};
/* L40S datasheet: 91.6 FP32, TF32 183, BF16/FP16 362.05, FP8 733, INT8 733,
 * INT4 733 (dense; sparse doubles), 48 GB, 864 GB/s. */
static const char src_l40s[] =
    "NVIDIA L40S GPU datasheet, https://www.nvidia.com/en-us/data-center/l40s/";
static const mfu_dense_tflops peaks_l40s = {
    .fp32 = 91.6, .tf32 = 183.0, .fp16 = 362.05, .bf16 = 362.05, .fp8 = 733.0,
    .int8 = 733.0, .int4 = 733.0};
/* L20 (China-market AD102, 92 SMs): NVIDIA publishes no datasheet. Partner
 * figures: FP32 59.8, TF32 59.8, BF16/FP16 119.5, FP8/INT8 239 (reseller
 * sheets of NVIDIA's figures; Alibaba Cloud's instance docs round them to
 * 59.3 / 119 / 237), 48 GB GDDR6, 864 GB/s. Dense: they follow the L40's
 * dense 1 : 2 : 4 chain (FP32 90.5 : FP16 181 : FP8 362); 92 x 128 x 2 x
 * 2520 MHz = 59.35 TFLOP/s FP32 checks the scale. */
static const char src_l20[] =
    "NVIDIA L20 partner specifications (no public NVIDIA datasheet): Alibaba Cloud GPU instance families, https://www.alibabacloud.com/help/zh/egs/gpu-accelerated-compute-optimized-instance-families, and https://www.hypertek.nl/product/nvidia-l20-48gb-gpu/";
static const mfu_dense_tflops peaks_l20 = {
    .fp32 = 59.8, .tf32 = 59.8, .fp16 = 119.5, .bf16 = 119.5, .fp8 = 239.0,
    .int8 = 239.0};
/* Ada whitepaper, GeForce RTX 4090: 82.6 FP32 and TF32, FP16/BF16 with FP32
 * accumulate 165.2 (330.4 sparse), FP8 with FP32 accumulate 330.3,
 * INT8 660.6, INT4 1321.2, 128 SMs, boost 2520 MHz, 24 GB, 1008 GB/s.
 * GeForce RTX 4080 (16 GB, AD103): 48.7 FP32 and TF32, FP16/BF16 with FP32
 * accumulate 97.5, FP8 with FP32 accumulate 194.9, INT8 389.9, INT4 779.8,
 * 76 SMs, boost 2505 MHz, 716.8 GB/s. */
static const char src_ada[] =
    "NVIDIA Ada GPU Architecture whitepaper, https://images.nvidia.com/aem-dam/Solutions/geforce/ada/nvidia-ada-gpu-architecture.pdf";
static const mfu_dense_tflops peaks_4090 = {
    .fp32 = 82.6, .tf32 = 82.6, .fp16 = 165.2, .bf16 = 165.2, .fp8 = 330.3,
    .int8 = 660.6, .int4 = 1321.2};
static const mfu_dense_tflops peaks_4080 = {
    .fp32 = 48.7, .tf32 = 48.7, .fp16 = 97.5, .bf16 = 97.5, .fp8 = 194.9,
    .int8 = 389.9, .int4 = 779.8};
/* RTX 6000 Ada Generation datasheet: 91.1 FP32, tensor 1,457.0 ("effective
 * FP8 TFLOPS using the sparsity feature"), 142 SMs, 48 GB GDDR6, 960 GB/s,
 * boost 2505 MHz. Dense FP8 = 1457.0 / 2 = 728.5 = 142 x 2048 FLOP/clock x
 * 2.505e9; the professional AD102 (like the L40S) runs FP16/BF16 with FP32
 * accumulate at half the FP8 rate, 728.5 / 2 = 364.2, and TF32 at half
 * that, 182.1. INT8/INT4 not in the datasheet: absent. */
static const char src_rtx6000_ada[] =
    "NVIDIA RTX 6000 Ada Generation datasheet, https://www.nvidia.com/content/dam/en-zz/Solutions/design-visualization/rtx-6000/proviz-rtx-6000-ada-datasheet-2616456-r5.pdf";
static const mfu_dense_tflops peaks_rtx6000_ada = {
    .fp32 = 91.1, .tf32 = 182.1, .fp16 = 364.2, .bf16 = 364.2, .fp8 = 728.5};

/* ---- NVIDIA Hopper: GH100 ---- */
/* H100 whitepaper (H100 SXM5, 132 SMs, 1830 MHz tensor boost): FP64 tensor
 * 66.9, FP32 66.9, TF32 494.7, FP16/BF16 989.4, FP8 1978.9, INT8 1978.9 --
 * the datasheet prints 1,979 BF16 "with sparsity": 1978.9 / 2 = 989.4.
 * 80 GB HBM3, 3.35 TB/s, max boost 1980 MHz. The H200 SXM (datasheet: FP64
 * 67, BF16 1,979*) and the GH200 (datasheet: TF32 494, BF16/FP16 990 dense)
 * are this GPU at the same clock: the same dense peaks. */
static const char src_h100[] =
    "NVIDIA H100 Tensor Core GPU datasheet and H100 architecture whitepaper, https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet";
static const mfu_dense_tflops peaks_gh100_sxm = {
    .fp64 = 66.9, .fp32 = 66.9, .tf32 = 494.7, .fp16 = 989.4, .bf16 = 989.4,
    .fp8 = 1978.9, .int8 = 1978.9};
/* H100 datasheet, PCIe (114 SMs): FP64 tensor 51, FP32 51, TF32 756*,
 * BF16/FP16 1,513*, FP8 3,026*, INT8 3,026* (* sparse) -> dense
 * 378 / 756.5 / 1513 / 1513; 80 GB HBM2e, 2.0 TB/s. */
static const char src_h100_pcie[] =
    "NVIDIA H100 Tensor Core GPU datasheet, https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet";
static const mfu_dense_tflops peaks_gh100_pcie = {
    .fp64 = 51.0, .fp32 = 51.0, .tf32 = 378.0, .fp16 = 756.5, .bf16 = 756.5,
    .fp8 = 1513.0, .int8 = 1513.0};
/* H100 datasheet, NVL (per GPU, 132 SMs): FP64 tensor 60, FP32 60,
 * TF32 835*, BF16/FP16 1,671*, FP8 3,341*, INT8 3,341* (* sparse) -> dense
 * 417.5 / 835.5 / 1670.5 / 1670.5; 94 GB HBM3, 3.9 TB/s. H200 datasheet,
 * NVL: the same figures (FP64 60, 1,671* BF16); 141 GB, 4.8 TB/s. */
static const char src_h100_nvl[] =
    "NVIDIA H100 Tensor Core GPU datasheet (H100 NVL), https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet";
static const mfu_dense_tflops peaks_gh100_nvl = {
    .fp64 = 60.0, .fp32 = 60.0, .tf32 = 417.5, .fp16 = 835.5, .bf16 = 835.5,
    .fp8 = 1670.5, .int8 = 1670.5};
/* H800 datasheet, SXM: the H100 SXM's GH100 with FP64 (vector and tensor)
 * cut to 1 TFLOPS and NVLink to 400 GB/s; FP32 67, TF32 989*, BF16 1,979*,
 * FP8 3,958* (* sparse) -> the H100 SXM's dense peaks: 1978.9 / 2 = 989.4
 * BF16. 80 GB HBM3, 3.35 TB/s. */
static const char src_h800[] =
    "NVIDIA H800 Tensor Core GPU datasheet, https://www.nvidia.cn/data-center/h800/";
static const mfu_dense_tflops peaks_h800_sxm = {
    .fp64 = 1.0, .fp32 = 66.9, .tf32 = 494.7, .fp16 = 989.4, .bf16 = 989.4,
    .fp8 = 1978.9, .int8 = 1978.9};
/* H800 datasheet, PCIe: the H100 PCIe's GH100 (114 SMs) with FP64 (vector
 * and tensor) cut to 0.8 TFLOPS; FP32 51, TF32 756*, BF16/FP16 1,513*,
 * FP8/INT8 3,026* (* sparse) -> dense 378 / 756.5 / 1513, the H100 PCIe's;
 * 80 GB HBM2e, 2 TB/s. */
static const char src_h800_pcie[] =
    "NVIDIA H800 Tensor Core GPU datasheet (H800 PCIe), https://www.nvidia.cn/data-center/h800/, and Lenovo ThinkSystem NVIDIA H800 PCIe Gen5 GPU product guide, https://lenovopress.lenovo.com/lp1814-thinksystem-nvidia-h800-pcie-gen5-gpu";
static const mfu_dense_tflops peaks_h800_pcie = {
    .fp64 = 0.8, .fp32 = 51.0, .tf32 = 378.0, .fp16 = 756.5, .bf16 = 756.5,
    .fp8 = 1513.0, .int8 = 1513.0};
/* H20 (China-market Hopper, 78 SMs): FP64 1, FP32 44, TF32 74, BF16/FP16
 * 148, FP8 296, INT8 296 (dense), 96 GB HBM3, 4.0 TB/s. NVIDIA publishes no
 * public datasheet; figures as NVIDIA gave them to partners and the press
 * reported them. */
static const char src_h20[] =
    "NVIDIA H20 specifications as reported from NVIDIA partner material (no public datasheet), e.g. https://willitrunai.com/gpus/h20-96gb";
static const mfu_dense_tflops peaks_h20 = {
    .fp64 = 1.0, .fp32 = 44.0, .tf32 = 74.0, .fp16 = 148.0, .bf16 = 148.0,
    .fp8 = 296.0, .int8 = 296.0};
/* H200 datasheet: SXM 141 GB HBM3e, 4.8 TB/s; the driver prints
 * "NVIDIA H200" for SXM. NVL: same SMs and memory, so only the name's "NVL"
 * tells them apart and the row requires the token. */
static const char src_h200[] =
    "NVIDIA H200 Tensor Core GPU datasheet, https://www.nvidia.com/en-us/data-center/h200/";
static const char src_h200_nvl[] =
    "NVIDIA H200 Tensor Core GPU datasheet (H200 NVL), https://www.nvidia.com/en-us/data-center/h200/";
/* GH200 datasheet (per superchip = one GPU): 96 GB HBM3 at 4 TB/s (sold as
 * "GH200 480GB", counting the 480 GB LPDDR5X) or 144 GB HBM3e at 4.9 TB/s. */
static const char src_gh200[] =
    "NVIDIA GH200 Grace Hopper Superchip datasheet, https://resources.nvidia.com/en-us-grace-cpu/grace-hopper-superchip";

/* ---- NVIDIA Blackwell ---- */
/* HGX B200 (8 GPUs): FP4 144 PF*, FP8/FP6 72 PF*, INT8 72 POPS*, FP16/BF16
 * 36 PF*, TF32 18 PF* (* sparse), FP32 600 TF, FP64 296 TF, 1.44 TB HBM3e.
 * Per GPU dense = total / 8 / 2: FP4 144000 / 8 / 2 = 9000, FP8 4500,
 * INT8 4500, BF16 2250, TF32 1125; FP32 600 / 8 = 75, FP64 296 / 8 = 37;
 * 180 GB. 148 SMs. Bandwidth: the Blackwell datasheet's per-GPU figure for
 * HGX B200, 7.7 TB/s (the HGX page's 64 TB/s per board is 8 TB/s per GPU;
 * the driver reports a 7680-bit bus: 7680 / 8 x 3996 MHz x 2 = 7.67 TB/s).
 * The datasheet rounds TF32 to 2.2 PF sparse per GPU; 18 PF / 8 / 2 = 1125
 * is kept. */
static const char src_b200[] =
    "NVIDIA HGX B200 specifications, https://www.nvidia.com/en-us/data-center/hgx/, and NVIDIA Blackwell datasheet (per-GPU table), https://nvdam.widen.net/s/wwnsxrhm2w/blackwell-datasheet-3384703";
static const mfu_dense_tflops peaks_b200 = {
    .fp64 = 37.0, .fp32 = 75.0, .tf32 = 1125.0, .fp16 = 2250.0, .bf16 = 2250.0,
    .fp8 = 4500.0, .int8 = 4500.0, .fp4 = 9000.0};
/* HGX B300 (8 GPUs): FP8 72 PF*, FP16/BF16 36 PF*, TF32 18 PF* (* sparse),
 * FP32 600 TF, FP64 10 TF, 2.3 TB HBM3e. Per GPU dense: FP8 72000 / 8 / 2 =
 * 4500, BF16 2250, TF32 1125; FP32 75, FP64 1.25; 288 GB. INT8: NVIDIA
 * publishes only a sparse board figure (2 POPS*) and no dense one: absent.
 * Dense FP4 (105, 108 or 112 PF per board in different sources), bandwidth
 * and SM count not verified: absent. */
static const char src_b300[] =
    "NVIDIA HGX B300 specifications, https://www.nvidia.com/en-us/data-center/hgx/";
static const mfu_dense_tflops peaks_b300 = {
    .fp64 = 1.25, .fp32 = 75.0, .tf32 = 1125.0, .fp16 = 2250.0, .bf16 = 2250.0,
    .fp8 = 4500.0};
/* GB200 NVL72 (72 GPUs): FP4 1,440 PF*, FP8/FP6 720 PF*, INT8 720 POPS*,
 * FP16/BF16 360 PF*, TF32 180 PF* (* sparse), 13.4 TB HBM3e, 576 TB/s.
 * Per GPU = total / 72 (/ 2 for sparse): FP4 1440000 / 72 / 2 = 10000,
 * FP8 5000, INT8 5000, BF16 2500, TF32 1250; 186 GB, 8 TB/s. FP32 and FP64
 * are the Blackwell datasheet's per-GPU figures for GB200 NVL72: FP32 80,
 * FP64 / FP64 tensor 40 (the NVL72 page's 5,760 and 2,880 TF per rack / 72;
 * launch-era pages gave 6,480 and 3,240 per rack, i.e. 90 and 45).
 * SM count not verified. */
static const char src_gb200[] =
    "NVIDIA GB200 NVL72 specifications (per GPU = rack / 72), https://www.nvidia.com/en-us/data-center/gb200-nvl72/, and NVIDIA Blackwell datasheet (per-GPU table), https://nvdam.widen.net/s/wwnsxrhm2w/blackwell-datasheet-3384703";
static const mfu_dense_tflops peaks_gb200 = {
    .fp64 = 40.0, .fp32 = 80.0, .tf32 = 1250.0, .fp16 = 2500.0, .bf16 = 2500.0,
    .fp8 = 5000.0, .int8 = 5000.0, .fp4 = 10000.0};
/* GB300 NVL72 (72 GPUs): FP4 1,440 PF* | 1,080 PF dense, FP8 720 PF*,
 * FP16/BF16 360 PF*, TF32 180 PF*, 20 TB HBM3e (288 GB per GPU), 576 TB/s.
 * Per GPU dense: FP4 1080000 / 72 = 15000, FP8 5000, BF16 2500, TF32 1250;
 * 8 TB/s. INT8, FP32, FP64 and the SM count not verified: absent. */
static const char src_gb300[] =
    "NVIDIA GB300 NVL72 specifications (per GPU = rack / 72), https://www.nvidia.com/en-us/data-center/gb300-nvl72/";
static const mfu_dense_tflops peaks_gb300 = {
    .tf32 = 1250.0, .fp16 = 2500.0, .bf16 = 2500.0, .fp8 = 5000.0,
    .fp4 = 15000.0};
/* RTX Blackwell whitepaper, GeForce RTX 5090: 104.8 FP32 and TF32,
 * FP16/BF16 with FP32 accumulate 209.5 (838 FP16-accumulate sparse / 2 / 2),
 * FP8 with FP32 accumulate 419, INT8 838, FP4 1676 (3,352 AI TOPS sparse /
 * 2); 170 SMs, boost 2407 MHz, 32 GB GDDR7, 1792 GB/s. */
static const char src_5090[] =
    "NVIDIA RTX Blackwell GPU Architecture whitepaper, https://images.nvidia.com/aem-dam/Solutions/geforce/blackwell/nvidia-rtx-blackwell-gpu-architecture.pdf";
static const mfu_dense_tflops peaks_5090 = {
    .fp32 = 104.8, .tf32 = 104.8, .fp16 = 209.5, .bf16 = 209.5, .fp8 = 419.0,
    .int8 = 838.0, .fp4 = 1676.0};
/* RTX PRO 6000 Blackwell Workstation Edition datasheet: 125 FP32, 4000 AI
 * TOPS ("effective FP4 TOPS with sparsity"), 188 SMs, 96 GB GDDR7, 1792
 * GB/s, 600 W. Dense FP4 = 4000 / 2 = 2000 (188 x 4096 FLOP/clock x ~2.6
 * GHz); GB202 runs FP8 at half the FP4 rate, 1000, and (unlike the GeForce
 * RTX 5090) FP16/BF16 with FP32 accumulate at half the FP8 rate, 500; TF32
 * at half that, 250. INT8 not in the datasheet: absent. The Max-Q and
 * Server Editions have other clocks and power: other products. */
static const char src_rtx_pro_6000[] =
    "NVIDIA RTX PRO 6000 Blackwell Workstation Edition datasheet, https://www.nvidia.com/content/dam/en-zz/Solutions/data-center/rtx-pro-6000-blackwell-workstation-edition/workstation-blackwell-rtx-pro-6000-workstation-edition-nvidia-us-3519208-web.pdf";
static const mfu_dense_tflops peaks_rtx_pro_6000 = {
    .fp32 = 125.0, .tf32 = 250.0, .fp16 = 500.0, .bf16 = 500.0, .fp8 = 1000.0,
    .fp4 = 2000.0};

/* ---- AMD CDNA 2 (the OS shows each GCD of an OAM as a device) ---- */
/* MI250X (OAM = 2 GCDs): FP64/FP32 matrix 95.7, FP16/BF16 383, INT8/INT4
 * 383, 220 CUs, 1700 MHz, 128 GB HBM2e, 3.2 TB/s. Per GCD = / 2: 47.85
 * FP64/FP32, 191.5 FP16/BF16/INT8/INT4, 110 CUs, 64 GB, 1.6 TB/s. CDNA 2
 * has no TF32 or FP8. */
static const char src_mi250x[] =
    "AMD Instinct MI250X accelerator specifications, https://www.amd.com/en/products/accelerators/instinct/mi200/mi250x.html";
static const mfu_dense_tflops peaks_mi250x_gcd = {
    .fp64 = 47.85, .fp32 = 47.85, .fp16 = 191.5, .bf16 = 191.5, .int8 = 191.5,
    .int4 = 191.5};
/* MI250 (OAM, 2 GCDs): FP64/FP32 matrix 90.5, FP16/BF16 362.1, INT8/INT4
 * 362.1, 208 CUs, 1700 MHz, 128 GB, 3.2 TB/s. Per GCD = / 2. */
static const char src_mi250[] =
    "AMD Instinct MI250 accelerator specifications, https://www.amd.com/en/products/accelerators/instinct/mi200/mi250.html";
static const mfu_dense_tflops peaks_mi250_gcd = {
    .fp64 = 45.25, .fp32 = 45.25, .fp16 = 181.05, .bf16 = 181.05,
    .int8 = 181.05, .int4 = 181.05};
/* MI210 (PCIe, one GCD): FP64/FP32 matrix 45.3 (vector 22.6), FP16/BF16
 * 181.0, INT8/INT4 181.0, 104 CUs, 1700 MHz, 64 GB HBM2e, 1.6 TB/s:
 * 104 x 1024 FLOP/clock x 1.7e9 = 181.0 TFLOP/s FP16. */
static const char src_mi210[] =
    "AMD Instinct MI210 accelerator specifications, https://www.amd.com/en/products/accelerators/instinct/mi200/mi210.html";
static const mfu_dense_tflops peaks_mi210 = {
    .fp64 = 45.3, .fp32 = 45.3, .fp16 = 181.0, .bf16 = 181.0, .int8 = 181.0,
    .int4 = 181.0};

/* ---- AMD CDNA 3 ---- */
/* MI300X datasheet: FP64 matrix 163.4 (vector 81.7), FP32 matrix 163.4,
 * TF32 653.7, FP16/BF16 1307.4, FP8 2614.9, INT8 2614.9 (dense; sparse
 * doubles), 304 CUs, 2100 MHz, 192 GB HBM3, 5.3 TB/s. MI325X datasheet: the
 * MI300X's compute (304 CUs, 2100 MHz, the same peaks); 256 GB HBM3E,
 * 6 TB/s. */
static const char src_mi300x[] =
    "AMD Instinct MI300X accelerator datasheet, https://www.amd.com/en/products/accelerators/instinct/mi300/mi300x.html";
static const char src_mi325x[] =
    "AMD Instinct MI325X accelerator datasheet, https://www.amd.com/en/products/accelerators/instinct/mi300/mi325x.html";
static const mfu_dense_tflops peaks_mi300x = {
    .fp64 = 163.4, .fp32 = 163.4, .tf32 = 653.7, .fp16 = 1307.4,
    .bf16 = 1307.4, .fp8 = 2614.9, .int8 = 2614.9};
/* MI300A datasheet: FP64 matrix 122.6 (vector 61.3), FP32 122.6, FP16/BF16
 * 980.6, INT8 1961.2, 228 CUs, 2100 MHz, 128 GB unified HBM3, 5.3 TB/s.
 * TF32 and FP8 follow from the MI300X's at the same clock:
 * 653.7 x 228/304 = 490.3, 2614.9 x 228/304 = 1961.2. */
static const char src_mi300a[] =
    "AMD Instinct MI300A APU datasheet, https://www.amd.com/en/products/accelerators/instinct/mi300/mi300a.html";
static const mfu_dense_tflops peaks_mi300a = {
    .fp64 = 122.6, .fp32 = 122.6, .tf32 = 490.3, .fp16 = 980.6, .bf16 = 980.6,
    .fp8 = 1961.2, .int8 = 1961.2};

/* ---- AMD CDNA 4 ---- */
/* MI350X: the MI355X's 256 CUs at 2200 MHz (air-cooled, 1000 W): FP8
 * 256 x 8192 x 2.2e9 = 4613.7 TFLOP/s, INT8 the same, FP16/BF16 half of
 * that 2306.9, MXFP4 twice 9227.5; FP64 256 x 128 x 2.2e9 = 72.1, FP32
 * 256 x 256 x 2.2e9 = 144.2. 288 GB HBM3E, 8 TB/s. No TF32. */
static const char src_mi350x[] =
    "AMD Instinct MI350X accelerator specifications, https://www.amd.com/en/products/accelerators/instinct/mi350/mi350x.html";
static const mfu_dense_tflops peaks_mi350x = {
    .fp64 = 72.1, .fp32 = 144.2, .fp16 = 2306.9, .bf16 = 2306.9, .fp8 = 4613.7,
    .int8 = 4613.7, .fp4 = 9227.5};
/* MI355X: 256 CUs (ROCm GPU specifications), FP8 8192 FLOP/clock/CU (AMD,
 * ISSCC 2026) at 2400 MHz: 256 x 8192 x 2.4e9 = 5033.2 TFLOP/s ("5 PF");
 * FP16/BF16 half of that, 2516.6 ("2.5 PF"); MXFP4 twice, 10066.3
 * ("10 PF"). AMD's spec: FP64 vector/matrix 78.6 (256 x 128 x 2.4e9 =
 * 78.64), FP32 157.3 (256 x 256 x 2.4e9 = 157.29), INT8 5033.2 (the FP8
 * rate). 288 GB HBM3E, 8 TB/s. CDNA 4 drops TF32. */
static const char src_mi355x[] =
    "AMD Instinct MI355X accelerator datasheet and CDNA 4 whitepaper, https://www.amd.com/en/products/accelerators/instinct/mi350/mi355x.html";
static const mfu_dense_tflops peaks_mi355x = {
    .fp64 = 78.6, .fp32 = 157.3, .fp16 = 2516.6, .bf16 = 2516.6, .fp8 = 5033.2,
    .int8 = 5033.2, .fp4 = 10066.3};

/* ================================ the rows ================================ */

static const mfu_gpu_spec mfu_gpu_table[] = {
    /* ---------------- NVIDIA Pascal ---------------- */
    {.name = "P100 SXM2 16GB", .vendor = "NVIDIA", .architecture = "Pascal",
     .model_token = "p100", .variant_tokens = "sxm2 16gb hbm2", .reject_tokens = "",
     .cc_major = 6, .cc_minor = 0, .num_sms = 56, .boost_clock_hz = 1480e6,
     .memory_bytes = 16 * GB, .memory_bandwidth_bytes_per_sec = 732e9,
     .dense_tflops = &peaks_p100_sxm2, .source = src_p100_sxm2},
    {.name = "P100 PCIe 16GB", .vendor = "NVIDIA", .architecture = "Pascal",
     .model_token = "p100", .variant_tokens = "pcie 16gb hbm2", .reject_tokens = "",
     .cc_major = 6, .cc_minor = 0, .num_sms = 56, .boost_clock_hz = 1303e6,
     .memory_bytes = 16 * GB, .memory_bandwidth_bytes_per_sec = 732e9,
     .dense_tflops = &peaks_p100_pcie, .source = src_p100_pcie},
    {.name = "P100 PCIe 12GB", .vendor = "NVIDIA", .architecture = "Pascal",
     .model_token = "p100", .variant_tokens = "pcie 12gb hbm2", .reject_tokens = "",
     .cc_major = 6, .cc_minor = 0, .num_sms = 56, .boost_clock_hz = 1303e6,
     .memory_bytes = 12 * GB, .memory_bandwidth_bytes_per_sec = 549e9,
     .dense_tflops = &peaks_p100_pcie, .source = src_p100_pcie},

    /* ---------------- NVIDIA Volta ---------------- */
    {.name = "V100 SXM2 16GB", .vendor = "NVIDIA", .architecture = "Volta",
     .model_token = "v100", .variant_tokens = "sxm2 16gb hbm2", .reject_tokens = "",
     .cc_major = 7, .cc_minor = 0, .num_sms = 80, .boost_clock_hz = 1530e6,
     .memory_bytes = 16 * GB, .memory_bandwidth_bytes_per_sec = 900e9,
     .dense_tflops = &peaks_v100_sxm2, .source = src_v100,
     /* INT8 (DP4A) runs, the datasheet gives no figure */
     .unpublished_dtypes = "int8"},
    {.name = "V100 SXM2 32GB", .vendor = "NVIDIA", .architecture = "Volta",
     .model_token = "v100", .variant_tokens = "sxm2 32gb hbm2", .reject_tokens = "",
     .bare_name_default = 1,
     .cc_major = 7, .cc_minor = 0, .num_sms = 80, .boost_clock_hz = 1530e6,
     .memory_bytes = 32 * GB, .memory_bandwidth_bytes_per_sec = 900e9,
     .dense_tflops = &peaks_v100_sxm2, .source = src_v100,
     /* INT8 (DP4A) runs, the datasheet gives no figure */
     .unpublished_dtypes = "int8"},
    {.name = "V100 PCIe 16GB", .vendor = "NVIDIA", .architecture = "Volta",
     .model_token = "v100", .variant_tokens = "pcie 16gb hbm2", .reject_tokens = "",
     .cc_major = 7, .cc_minor = 0, .num_sms = 80, .boost_clock_hz = 1380e6,
     .memory_bytes = 16 * GB, .memory_bandwidth_bytes_per_sec = 900e9,
     .dense_tflops = &peaks_v100_pcie, .source = src_v100,
     /* INT8 (DP4A) runs, the datasheet gives no figure */
     .unpublished_dtypes = "int8"},
    {.name = "V100 PCIe 32GB", .vendor = "NVIDIA", .architecture = "Volta",
     .model_token = "v100", .variant_tokens = "pcie 32gb hbm2", .reject_tokens = "",
     .cc_major = 7, .cc_minor = 0, .num_sms = 80, .boost_clock_hz = 1380e6,
     .memory_bytes = 32 * GB, .memory_bandwidth_bytes_per_sec = 900e9,
     .dense_tflops = &peaks_v100_pcie, .source = src_v100,
     /* INT8 (DP4A) runs, the datasheet gives no figure */
     .unpublished_dtypes = "int8"},
    {.name = "V100S PCIe 32GB", .vendor = "NVIDIA", .architecture = "Volta",
     .model_token = "v100s", .variant_tokens = "pcie 32gb hbm2", .reject_tokens = "",
     .cc_major = 7, .cc_minor = 0, .num_sms = 80, .boost_clock_hz = 1601e6,
     .memory_bytes = 32 * GB, .memory_bandwidth_bytes_per_sec = 1134e9,
     .dense_tflops = &peaks_v100s_pcie, .source = src_v100,
     /* INT8 (DP4A) runs, the datasheet gives no figure */
     .unpublished_dtypes = "int8"},

    /* ---------------- NVIDIA Turing ---------------- */
    {.name = "T4", .vendor = "NVIDIA", .architecture = "Turing",
     .model_token = "t4", .variant_tokens = "16gb", .reject_tokens = "",
     .cc_major = 7, .cc_minor = 5, .num_sms = 40,
     .memory_bytes = 16 * GB, .memory_bandwidth_bytes_per_sec = 320e9,
     .dense_tflops = &peaks_t4, .source = src_t4,
     /* FP64 runs, the T4 datasheet gives no figure */
     .unpublished_dtypes = "fp64"},

    /* ---------------- NVIDIA Ampere ---------------- */
    {.name = "A100 SXM4 40GB", .vendor = "NVIDIA", .architecture = "Ampere",
     .model_token = "a100", .variant_tokens = "sxm sxm4 40gb hbm2", .reject_tokens = "",
     .cc_major = 8, .cc_minor = 0, .num_sms = 108, .boost_clock_hz = 1410e6,
     .memory_bytes = 40 * GB, .memory_bandwidth_bytes_per_sec = 1555e9,
     .dense_tflops = &peaks_ga100, .source = src_a100},
    {.name = "A100 SXM4 80GB", .vendor = "NVIDIA", .architecture = "Ampere",
     .model_token = "a100", .variant_tokens = "sxm sxm4 80gb hbm2e", .reject_tokens = "",
     .bare_name_default = 1,
     .cc_major = 8, .cc_minor = 0, .num_sms = 108, .boost_clock_hz = 1410e6,
     .memory_bytes = 80 * GB, .memory_bandwidth_bytes_per_sec = 2039e9,
     .dense_tflops = &peaks_ga100, .source = src_a100},
    {.name = "A100 PCIe 40GB", .vendor = "NVIDIA", .architecture = "Ampere",
     .model_token = "a100", .variant_tokens = "pcie 40gb hbm2", .reject_tokens = "",
     .cc_major = 8, .cc_minor = 0, .num_sms = 108, .boost_clock_hz = 1410e6,
     .memory_bytes = 40 * GB, .memory_bandwidth_bytes_per_sec = 1555e9,
     .dense_tflops = &peaks_ga100, .source = src_a100},
    {.name = "A100 PCIe 80GB", .vendor = "NVIDIA", .architecture = "Ampere",
     .model_token = "a100", .variant_tokens = "pcie 80gb hbm2e", .reject_tokens = "",
     .cc_major = 8, .cc_minor = 0, .num_sms = 108, .boost_clock_hz = 1410e6,
     .memory_bytes = 80 * GB, .memory_bandwidth_bytes_per_sec = 1935e9,
     .dense_tflops = &peaks_ga100, .source = src_a100},
    {.name = "A800 SXM4 80GB", .vendor = "NVIDIA", .architecture = "Ampere",
     .model_token = "a800", .variant_tokens = "sxm sxm4 80gb hbm2e", .reject_tokens = "",
     .bare_name_default = 1,
     .cc_major = 8, .cc_minor = 0, .num_sms = 108, .boost_clock_hz = 1410e6,
     .memory_bytes = 80 * GB, .memory_bandwidth_bytes_per_sec = 2039e9,
     .dense_tflops = &peaks_ga100, .source = src_a800},
    {.name = "A800 PCIe 80GB", .vendor = "NVIDIA", .architecture = "Ampere",
     .model_token = "a800", .variant_tokens = "pcie 80gb hbm2e", .reject_tokens = "",
     .cc_major = 8, .cc_minor = 0, .num_sms = 108, .boost_clock_hz = 1410e6,
     .memory_bytes = 80 * GB, .memory_bandwidth_bytes_per_sec = 1935e9,
     .dense_tflops = &peaks_ga100, .source = src_a800},
    {.name = "A800 PCIe 40GB", .vendor = "NVIDIA", .architecture = "Ampere",
     .model_token = "a800", .variant_tokens = "pcie 40gb hbm2", .reject_tokens = "",
     .cc_major = 8, .cc_minor = 0, .num_sms = 108, .boost_clock_hz = 1410e6,
     .memory_bytes = 40 * GB, .memory_bandwidth_bytes_per_sec = 1555e9,
     .dense_tflops = &peaks_ga100, .source = src_a800},
    {.name = "A30", .vendor = "NVIDIA", .architecture = "Ampere",
     .model_token = "a30", .variant_tokens = "24gb hbm2", .reject_tokens = "",
     .cc_major = 8, .cc_minor = 0, .num_sms = 56, .boost_clock_hz = 1440e6,
     .memory_bytes = 24 * GB, .memory_bandwidth_bytes_per_sec = 933e9,
     .dense_tflops = &peaks_a30, .source = src_a30},
    {.name = "A10", .vendor = "NVIDIA", .architecture = "Ampere",
     .model_token = "a10", .variant_tokens = "24gb", .reject_tokens = "",
     .cc_major = 8, .cc_minor = 6, .num_sms = 72,
     .memory_bytes = 24 * GB, .memory_bandwidth_bytes_per_sec = 600e9,
     .dense_tflops = &peaks_a10, .source = src_a10},
    {.name = "A10G", .vendor = "NVIDIA", .architecture = "Ampere",
     .model_token = "a10g", .variant_tokens = "24gb", .reject_tokens = "",
     .cc_major = 8, .cc_minor = 6, .num_sms = 0, .memory_bytes = 24 * GB,
     .dense_tflops = NULL, .source = src_a10g,
     /* GA102 like the A10: no published figure for any */
     .unpublished_dtypes = "fp32 tf32 fp16 bf16 int8 int4"},
    {.name = "A40", .vendor = "NVIDIA", .architecture = "Ampere",
     .model_token = "a40", .variant_tokens = "48gb", .reject_tokens = "",
     .cc_major = 8, .cc_minor = 6, .num_sms = 84,
     .memory_bytes = 48 * GB, .memory_bandwidth_bytes_per_sec = 696e9,
     .dense_tflops = &peaks_a40, .source = src_a40},
    {.name = "RTX A6000", .vendor = "NVIDIA", .architecture = "Ampere",
     .model_token = "a6000", .variant_tokens = "48gb", .reject_tokens = "ada",
     .cc_major = 8, .cc_minor = 6, .num_sms = 84, .boost_clock_hz = 1800e6,
     .memory_bytes = 48 * GB, .memory_bandwidth_bytes_per_sec = 768e9,
     .dense_tflops = &peaks_a6000, .source = src_a6000,
     /* not verified: see peaks_a6000 */
     .unpublished_dtypes = "tf32 int8 int4"},
    {.name = "GeForce RTX 3090", .vendor = "NVIDIA", .architecture = "Ampere",
     .model_token = "3090", .variant_tokens = "24gb", .reject_tokens = "ti laptop mobile",
     .cc_major = 8, .cc_minor = 6, .num_sms = 82, .boost_clock_hz = 1695e6,
     .memory_bytes = 24 * GB, .memory_bandwidth_bytes_per_sec = 936e9,
     .dense_tflops = &peaks_3090, .source = src_3090},

    /* ---------------- NVIDIA Ada Lovelace ---------------- */
    {.name = "L4", .vendor = "NVIDIA", .architecture = "Ada Lovelace",
     .model_token = "l4", .variant_tokens = "24gb", .reject_tokens = "",
     .cc_major = 8, .cc_minor = 9, .num_sms = 58,
     .memory_bytes = 24 * GB, .memory_bandwidth_bytes_per_sec = 300e9,
     .dense_tflops = &peaks_l4, .source = src_l4},
    {.name = "L40", .vendor = "NVIDIA", .architecture = "Ada Lovelace",
     .model_token = "l40", .variant_tokens = "48gb", .reject_tokens = "",
     .cc_major = 8, .cc_minor = 9, .num_sms = 142,
     .memory_bytes = 48 * GB, .memory_bandwidth_bytes_per_sec = 864e9,
     .dense_tflops = &peaks_l40, .source = src_l40},
    {.name = "L40S", .vendor = "NVIDIA", .architecture = "Ada Lovelace",
     .model_token = "l40s", .variant_tokens = "48gb", .reject_tokens = "",
     .cc_major = 8, .cc_minor = 9, .num_sms = 142,
     .memory_bytes = 48 * GB, .memory_bandwidth_bytes_per_sec = 864e9,
     .dense_tflops = &peaks_l40s, .source = src_l40s},
    {.name = "L20", .vendor = "NVIDIA", .architecture = "Ada Lovelace",
     .model_token = "l20", .variant_tokens = "48gb", .reject_tokens = "",
     .cc_major = 8, .cc_minor = 9, .num_sms = 92,
     .memory_bytes = 48 * GB, .memory_bandwidth_bytes_per_sec = 864e9,
     .dense_tflops = &peaks_l20, .source = src_l20},
    {.name = "GeForce RTX 4090", .vendor = "NVIDIA", .architecture = "Ada Lovelace",
     .model_token = "4090", .variant_tokens = "24gb",
     .reject_tokens = "d ti super laptop mobile",
     .cc_major = 8, .cc_minor = 9, .num_sms = 128, .boost_clock_hz = 2520e6,
     .memory_bytes = 24 * GB, .memory_bandwidth_bytes_per_sec = 1008e9,
     .dense_tflops = &peaks_4090, .source = src_ada},
    /* "4080 SUPER" (80 SMs) is another product: rejected, not matched. */
    {.name = "GeForce RTX 4080", .vendor = "NVIDIA", .architecture = "Ada Lovelace",
     .model_token = "4080", .variant_tokens = "16gb",
     .reject_tokens = "super ti laptop mobile",
     .cc_major = 8, .cc_minor = 9, .num_sms = 76, .boost_clock_hz = 2505e6,
     .memory_bytes = 16 * GB, .memory_bandwidth_bytes_per_sec = 716.8e9,
     .dense_tflops = &peaks_4080, .source = src_ada},
    /* The driver prints "NVIDIA RTX 6000 Ada Generation"; "Quadro RTX 6000"
     * (Turing) has neither "ada" nor "blackwell": unknown. */
    {.name = "RTX 6000 Ada Generation", .vendor = "NVIDIA",
     .architecture = "Ada Lovelace", .model_token = "6000", .variant_tokens = "48gb",
     .reject_tokens = "", .required_token = "ada",
     .cc_major = 8, .cc_minor = 9, .num_sms = 142, .boost_clock_hz = 2505e6,
     .memory_bytes = 48 * GB, .memory_bandwidth_bytes_per_sec = 960e9,
     .dense_tflops = &peaks_rtx6000_ada, .source = src_rtx6000_ada,
     /* not in the datasheet: see peaks_rtx6000_ada */
     .unpublished_dtypes = "int8 int4"},

    /* ---------------- NVIDIA Hopper ---------------- */
    {.name = "H100 SXM", .vendor = "NVIDIA", .architecture = "Hopper",
     .model_token = "h100", .variant_tokens = "sxm sxm5 80gb hbm3", .reject_tokens = "",
     .bare_name_default = 1,
     .cc_major = 9, .cc_minor = 0, .num_sms = 132, .boost_clock_hz = 1980e6,
     .memory_bytes = 80 * GB, .memory_bandwidth_bytes_per_sec = 3.35e12,
     .dense_tflops = &peaks_gh100_sxm, .source = src_h100},
    {.name = "H100 PCIe", .vendor = "NVIDIA", .architecture = "Hopper",
     .model_token = "h100", .variant_tokens = "pcie 80gb hbm2e", .reject_tokens = "",
     .cc_major = 9, .cc_minor = 0, .num_sms = 114,
     .memory_bytes = 80 * GB, .memory_bandwidth_bytes_per_sec = 2.0e12,
     .dense_tflops = &peaks_gh100_pcie, .source = src_h100_pcie},
    {.name = "H100 NVL", .vendor = "NVIDIA", .architecture = "Hopper",
     .model_token = "h100", .variant_tokens = "nvl 94gb hbm3", .reject_tokens = "",
     .required_token = "nvl", /* a bare "NVIDIA H100" is never an NVL */
     .cc_major = 9, .cc_minor = 0, .num_sms = 132,
     .memory_bytes = 94 * GB, .memory_bandwidth_bytes_per_sec = 3.9e12,
     .dense_tflops = &peaks_gh100_nvl, .source = src_h100_nvl},
    {.name = "H800 SXM", .vendor = "NVIDIA", .architecture = "Hopper",
     .model_token = "h800", .variant_tokens = "sxm sxm5 80gb hbm3", .reject_tokens = "",
     .bare_name_default = 1,
     .cc_major = 9, .cc_minor = 0, .num_sms = 132,
     .memory_bytes = 80 * GB, .memory_bandwidth_bytes_per_sec = 3.35e12,
     .dense_tflops = &peaks_h800_sxm, .source = src_h800},
    {.name = "H800 PCIe", .vendor = "NVIDIA", .architecture = "Hopper",
     .model_token = "h800", .variant_tokens = "pcie 80gb hbm2e", .reject_tokens = "",
     .cc_major = 9, .cc_minor = 0, .num_sms = 114,
     .memory_bytes = 80 * GB, .memory_bandwidth_bytes_per_sec = 2.0e12,
     .dense_tflops = &peaks_h800_pcie, .source = src_h800_pcie},
    {.name = "H20", .vendor = "NVIDIA", .architecture = "Hopper",
     .model_token = "h20", .variant_tokens = "96gb hbm3", .reject_tokens = "",
     .cc_major = 9, .cc_minor = 0, .num_sms = 78,
     .memory_bytes = 96 * GB, .memory_bandwidth_bytes_per_sec = 4.0e12,
     .dense_tflops = &peaks_h20, .source = src_h20},
    {.name = "H200 SXM", .vendor = "NVIDIA", .architecture = "Hopper",
     .model_token = "h200", .variant_tokens = "sxm sxm5 141gb hbm3e", .reject_tokens = "",
     .bare_name_default = 1,
     .cc_major = 9, .cc_minor = 0, .num_sms = 132,
     .memory_bytes = 141 * GB, .memory_bandwidth_bytes_per_sec = 4.8e12,
     .dense_tflops = &peaks_gh100_sxm, .source = src_h200},
    {.name = "H200 NVL", .vendor = "NVIDIA", .architecture = "Hopper",
     .model_token = "h200", .variant_tokens = "nvl 141gb hbm3e", .reject_tokens = "",
     .required_token = "nvl",
     .cc_major = 9, .cc_minor = 0, .num_sms = 132,
     .memory_bytes = 141 * GB, .memory_bandwidth_bytes_per_sec = 4.8e12,
     .dense_tflops = &peaks_gh100_nvl, .source = src_h200_nvl},
    {.name = "GH200 96GB", .vendor = "NVIDIA", .architecture = "Hopper",
     .model_token = "gh200", .variant_tokens = "480gb 96gb hbm3", .reject_tokens = "",
     .bare_name_default = 1,
     .cc_major = 9, .cc_minor = 0, .num_sms = 132,
     .memory_bytes = 96 * GB, .memory_bandwidth_bytes_per_sec = 4.0e12,
     .dense_tflops = &peaks_gh100_sxm, .source = src_gh200},
    {.name = "GH200 144GB", .vendor = "NVIDIA", .architecture = "Hopper",
     .model_token = "gh200", .variant_tokens = "144g 144gb hbm3e", .reject_tokens = "",
     .cc_major = 9, .cc_minor = 0, .num_sms = 132,
     .memory_bytes = 144 * GB, .memory_bandwidth_bytes_per_sec = 4.9e12,
     .dense_tflops = &peaks_gh100_sxm, .source = src_gh200},

    /* ---------------- NVIDIA Blackwell ---------------- */
    {.name = "B200", .vendor = "NVIDIA", .architecture = "Blackwell",
     .model_token = "b200", .variant_tokens = "sxm6 180gb hbm3e", .reject_tokens = "",
     .cc_major = 10, .cc_minor = 0, .num_sms = 148,
     .memory_bytes = 180 * GB, .memory_bandwidth_bytes_per_sec = 7.7e12,
     .dense_tflops = &peaks_b200, .source = src_b200},
    {.name = "B300", .vendor = "NVIDIA", .architecture = "Blackwell Ultra",
     .model_token = "b300", .variant_tokens = "sxm6 288gb hbm3e", .reject_tokens = "",
     .cc_major = 10, .cc_minor = 3, .num_sms = 0, .memory_bytes = 288 * GB,
     .dense_tflops = &peaks_b300, .source = src_b300,
     /* sparse-only or unverified: see peaks_b300 */
     .unpublished_dtypes = "int8 fp4"},
    {.name = "GB200", .vendor = "NVIDIA", .architecture = "Blackwell",
     .model_token = "gb200", .variant_tokens = "186gb 192gb hbm3e", .reject_tokens = "",
     .cc_major = 10, .cc_minor = 0, .num_sms = 0,
     .memory_bytes = 186 * GB, .memory_bandwidth_bytes_per_sec = 8.0e12,
     .dense_tflops = &peaks_gb200, .source = src_gb200},
    {.name = "GB300", .vendor = "NVIDIA", .architecture = "Blackwell Ultra",
     .model_token = "gb300", .variant_tokens = "279gb 288gb hbm3e", .reject_tokens = "",
     .cc_major = 10, .cc_minor = 3, .num_sms = 0,
     .memory_bytes = 288 * GB, .memory_bandwidth_bytes_per_sec = 8.0e12,
     .dense_tflops = &peaks_gb300, .source = src_gb300,
     /* not verified: see peaks_gb300 */
     .unpublished_dtypes = "fp64 fp32 int8"},
    {.name = "GeForce RTX 5090", .vendor = "NVIDIA", .architecture = "Blackwell",
     .model_token = "5090", .variant_tokens = "32gb", .reject_tokens = "d ti laptop mobile",
     .cc_major = 12, .cc_minor = 0, .num_sms = 170, .boost_clock_hz = 2407e6,
     .memory_bytes = 32 * GB, .memory_bandwidth_bytes_per_sec = 1792e9,
     .dense_tflops = &peaks_5090, .source = src_5090},
    /* The driver prints "NVIDIA RTX PRO 6000 Blackwell Workstation Edition". */
    {.name = "RTX PRO 6000 Blackwell", .vendor = "NVIDIA", .architecture = "Blackwell",
     .model_token = "6000", .variant_tokens = "96gb", .reject_tokens = "max server",
     .required_token = "blackwell",
     .cc_major = 12, .cc_minor = 0, .num_sms = 188,
     .memory_bytes = 96 * GB, .memory_bandwidth_bytes_per_sec = 1792e9,
     .dense_tflops = &peaks_rtx_pro_6000, .source = src_rtx_pro_6000,
     /* not in the datasheet: see peaks_rtx_pro_6000 */
     .unpublished_dtypes = "int8"},

    /* ---------------- AMD CDNA 2 (per GCD) ---------------- */
    {.name = "MI250X (per GCD)", .vendor = "AMD", .architecture = "CDNA 2",
     .model_token = "mi250x", .variant_tokens = "", .reject_tokens = "",
     .cc_major = -1, .cc_minor = -1, .gfx_arch = "gfx90a", .num_sms = 110,
     .boost_clock_hz = 1700e6,
     .memory_bytes = 64 * GB, .memory_bandwidth_bytes_per_sec = 1.6e12,
     .dense_tflops = &peaks_mi250x_gcd, .source = src_mi250x},
    {.name = "MI250 (per GCD)", .vendor = "AMD", .architecture = "CDNA 2",
     .model_token = "mi250", .variant_tokens = "", .reject_tokens = "",
     .cc_major = -1, .cc_minor = -1, .gfx_arch = "gfx90a", .num_sms = 104,
     .boost_clock_hz = 1700e6,
     .memory_bytes = 64 * GB, .memory_bandwidth_bytes_per_sec = 1.6e12,
     .dense_tflops = &peaks_mi250_gcd, .source = src_mi250},
    {.name = "MI210", .vendor = "AMD", .architecture = "CDNA 2",
     .model_token = "mi210", .variant_tokens = "64gb hbm2e", .reject_tokens = "",
     .cc_major = -1, .cc_minor = -1, .gfx_arch = "gfx90a", .num_sms = 104,
     .boost_clock_hz = 1700e6,
     .memory_bytes = 64 * GB, .memory_bandwidth_bytes_per_sec = 1.6e12,
     .dense_tflops = &peaks_mi210, .source = src_mi210},

    /* ---------------- AMD CDNA 3 ---------------- */
    {.name = "MI300X", .vendor = "AMD", .architecture = "CDNA 3",
     .model_token = "mi300x", .variant_tokens = "192gb hbm3", .reject_tokens = "",
     .cc_major = -1, .cc_minor = -1, .gfx_arch = "gfx942", .num_sms = 304,
     .boost_clock_hz = 2100e6,
     .memory_bytes = 192 * GB, .memory_bandwidth_bytes_per_sec = 5.3e12,
     .dense_tflops = &peaks_mi300x, .source = src_mi300x},
    {.name = "MI300A", .vendor = "AMD", .architecture = "CDNA 3",
     .model_token = "mi300a", .variant_tokens = "128gb hbm3", .reject_tokens = "",
     .cc_major = -1, .cc_minor = -1, .gfx_arch = "gfx942", .num_sms = 228,
     .memory_shared_with_cpu = 1, .boost_clock_hz = 2100e6,
     .memory_bytes = 128 * GB, .memory_bandwidth_bytes_per_sec = 5.3e12,
     .dense_tflops = &peaks_mi300a, .source = src_mi300a},
    {.name = "MI325X", .vendor = "AMD", .architecture = "CDNA 3",
     .model_token = "mi325x", .variant_tokens = "256gb hbm3e", .reject_tokens = "",
     .cc_major = -1, .cc_minor = -1, .gfx_arch = "gfx942", .num_sms = 304,
     .boost_clock_hz = 2100e6,
     .memory_bytes = 256 * GB, .memory_bandwidth_bytes_per_sec = 6.0e12,
     .dense_tflops = &peaks_mi300x, .source = src_mi325x},

    /* ---------------- AMD CDNA 4 ---------------- */
    {.name = "MI350X", .vendor = "AMD", .architecture = "CDNA 4",
     .model_token = "mi350x", .variant_tokens = "288gb hbm3e", .reject_tokens = "",
     .cc_major = -1, .cc_minor = -1, .gfx_arch = "gfx950", .num_sms = 256,
     .boost_clock_hz = 2200e6,
     .memory_bytes = 288 * GB, .memory_bandwidth_bytes_per_sec = 8.0e12,
     .dense_tflops = &peaks_mi350x, .source = src_mi350x},
    {.name = "MI355X", .vendor = "AMD", .architecture = "CDNA 4",
     .model_token = "mi355x", .variant_tokens = "288gb hbm3e", .reject_tokens = "",
     .cc_major = -1, .cc_minor = -1, .gfx_arch = "gfx950", .num_sms = 256,
     .boost_clock_hz = 2400e6,
     .memory_bytes = 288 * GB, .memory_bandwidth_bytes_per_sec = 8.0e12,
     .dense_tflops = &peaks_mi355x, .source = src_mi355x},
};

#define MFU_GPU_TABLE_LEN (sizeof mfu_gpu_table / sizeof mfu_gpu_table[0])

/* ============================ table access ============================ */

size_t mfu_gpu_spec_count(void)
{
    return MFU_GPU_TABLE_LEN;
}

mfu_status mfu_gpu_spec_get(size_t index, const mfu_gpu_spec **out)
{
    if (out == NULL || index >= MFU_GPU_TABLE_LEN)
        return MFU_ERR_INVALID_ARGUMENT;
    *out = &mfu_gpu_table[index];
    return MFU_OK;
}

mfu_status mfu_gpu_spec_peak_tflops(const mfu_gpu_spec *spec, mfu_dtype dtype,
                                    double *tflops_out)
{
    const mfu_dense_tflops *p;
    double value;
    if (spec == NULL || tflops_out == NULL || mfu_dtype_name(dtype) == NULL)
        return MFU_ERR_INVALID_ARGUMENT;
    p = spec->dense_tflops;
    if (p == NULL)
        return MFU_ERR_NOT_FOUND; /* a known device without sourced peaks */
    switch (dtype) {
    case MFU_DTYPE_FP64: value = p->fp64; break;
    case MFU_DTYPE_FP32: value = p->fp32; break;
    case MFU_DTYPE_TF32: value = p->tf32; break;
    case MFU_DTYPE_FP16: value = p->fp16; break;
    case MFU_DTYPE_BF16: value = p->bf16; break;
    case MFU_DTYPE_FP8: value = p->fp8; break;
    case MFU_DTYPE_INT8: value = p->int8; break;
    case MFU_DTYPE_INT4: value = p->int4; break;
    case MFU_DTYPE_FP4: value = p->fp4; break;
    default: return MFU_ERR_INVALID_ARGUMENT;
    }
    if (!(value > 0.0))
        return MFU_ERR_NOT_FOUND;
    *tflops_out = value;
    return MFU_OK;
}

int mfu_gpu_spec_peak_unpublished(const mfu_gpu_spec *spec, mfu_dtype dtype)
{
    const char *name = mfu_dtype_name(dtype), *p;
    size_t len;
    if (spec == NULL || name == NULL || spec->unpublished_dtypes == NULL)
        return 0;
    len = strlen(name);
    for (p = spec->unpublished_dtypes; *p != '\0';) {
        size_t word = strcspn(p, " ");
        if (word == len && strncmp(p, name, len) == 0)
            return 1;
        p += word;
        while (*p == ' ')
            p++;
    }
    return 0;
}
