#!/usr/bin/env python3
"""Write the fuzz targets' seed corpus (tests/c/fuzz/corpus/<target>/).

Each entry is spelled here in readable form and encoded in the input layout
its target documents (tests/c/fuzz/fuzz_*.c). Integers use the exact
encoding of fuzz_input.h: a tag byte 0, then the little-endian bytes.
Regenerate with `make fuzz-corpus`; add an entry here (not a loose file)
for every input a fuzzer finds, so the corpus stays reproducible.
"""
import os
import shutil
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")

I64_MAX = 2**63 - 1
I64_MIN = -(2**63)
I32_MAX = 2**31 - 1
I32_MIN = -(2**31)
U64_MAX = 2**64 - 1
GIB = 2**30


def u8(v):
    return bytes([v & 0xFF])


def i64(v):
    return b"\x00" + struct.pack("<q", v)


def i32(v):
    return b"\x00" + struct.pack("<i", v)


def u64(v):
    return struct.pack("<Q", v)


def write(target, entries):
    d = os.path.join(CORPUS, target)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    names = set()
    for name, data in entries:
        assert name not in names, name
        names.add(name)
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)


# ---- fuzz_lookup: flags, cc_major, cc_minor, num_sms, memory, name --------

def lookup(name, cc=(-1, -1), sms=-1, mem=0, flags=0):
    if isinstance(name, str):
        name = name.encode()
    return u8(flags) + i32(cc[0]) + i32(cc[1]) + i32(sms) + u64(mem) + name


LOOKUP = [
    # real devices as torch.cuda.get_device_name / properties report them
    ("h100_sxm", lookup("NVIDIA H100 80GB HBM3", (9, 0), 132, 79 * GIB)),
    ("h100_pcie", lookup("NVIDIA H100 PCIe", (9, 0), 114, 80 * GIB)),
    ("h100_nvl", lookup("NVIDIA H100 NVL", (9, 0), 132, 94 * GIB)),
    ("h100_bare_ambiguous", lookup("NVIDIA H100")),
    # rule 3: ambiguous names whose rows agree (A100: every peak; 40GB: the
    # bandwidth too) or do not (H100 80GB); many model tokens: more rows
    # fit than are listed
    ("a100_bare_agreeing", lookup("A100")),
    ("a100_40gb_bandwidth_agrees", lookup("A100 40GB")),
    ("h100_80gb_differs", lookup("H100 80GB")),
    ("many_models_over_the_list", lookup("a100 a800 h100 h800 v100 mi300x")),
    ("h200", lookup("NVIDIA H200", (9, 0), 132, 140 * GIB)),
    ("gh200", lookup("NVIDIA GH200 480GB", (9, 0), 132, 95 * GIB)),
    ("h800", lookup("NVIDIA H800", (9, 0), 132, 80 * GIB)),
    ("h20", lookup("NVIDIA H20", (9, 0), 78, 96 * GIB)),
    ("a100_sxm40", lookup("NVIDIA A100-SXM4-40GB", (8, 0), 108, 40 * GIB)),
    ("a100_sxm80", lookup("NVIDIA A100-SXM4-80GB", (8, 0), 108, 80 * GIB)),
    ("a100_pcie80", lookup("NVIDIA A100 80GB PCIe", (8, 0), 108, 80 * GIB)),
    ("a100_mig", lookup("NVIDIA A100-SXM4-40GB MIG 3g.20gb", (8, 0), 42, 20 * GIB)),
    ("h100_mig", lookup("NVIDIA H100 80GB HBM3 MIG 1g.10gb", (9, 0), 16, 10 * GIB)),
    ("mig_too_many_sms", lookup("NVIDIA A100-SXM4-40GB MIG 7g.40gb", (8, 0), 200)),
    ("a800", lookup("NVIDIA A800-SXM4-80GB", (8, 0), 108, 80 * GIB)),
    ("a10", lookup("NVIDIA A10", (8, 6), 72, 23 * GIB)),
    ("a10g", lookup("NVIDIA A10G", (8, 6), 80, 23 * GIB)),
    ("a40", lookup("NVIDIA A40", (8, 6), 84, 45 * GIB)),
    ("a6000", lookup("NVIDIA RTX A6000", (8, 6), 84, 48 * GIB)),
    ("l4", lookup("NVIDIA L4", (8, 9), 58, 22 * GIB)),
    ("l40", lookup("NVIDIA L40", (8, 9), 142, 45 * GIB)),
    ("l40s", lookup("NVIDIA L40S", (8, 9), 142, 45 * GIB)),
    ("t4", lookup("Tesla T4", (7, 5), 40, 15 * GIB)),
    ("v100_sxm2", lookup("Tesla V100-SXM2-16GB", (7, 0), 80, 16 * GIB)),
    ("v100_pcie", lookup("Tesla V100-PCIE-32GB", (7, 0), 80, 32 * GIB)),
    ("rtx3090", lookup("NVIDIA GeForce RTX 3090", (8, 6), 82, 24 * GIB)),
    ("rtx4090", lookup("NVIDIA GeForce RTX 4090", (8, 9), 128, 24 * GIB)),
    ("rtx4090d", lookup("NVIDIA GeForce RTX 4090 D", (8, 9), 114, 24 * GIB)),
    ("rtx4080_super", lookup("NVIDIA GeForce RTX 4080 SUPER", (8, 9), 80, 16 * GIB)),
    ("rtx4090_laptop", lookup("NVIDIA GeForce RTX 4090 Laptop GPU", (8, 9), 76)),
    ("rtx5090", lookup("NVIDIA GeForce RTX 5090", (12, 0), 170, 32 * GIB)),
    ("b200", lookup("NVIDIA B200", (10, 0), 148, 180 * GIB)),
    ("gb200", lookup("NVIDIA GB200", (10, 0), 152, 186 * GIB)),
    ("b300", lookup("NVIDIA B300", (10, 3), 148, 270 * GIB)),
    ("mi300x", lookup("AMD Instinct MI300X", (-1, -1), 304, 192 * GIB)),
    ("mi300x_cpx", lookup("AMD Instinct MI300X", (-1, -1), 38, 24 * GIB)),
    ("mi300a", lookup("AMD Instinct MI300A", (-1, -1), 228, 128 * GIB)),
    ("mi250x_gcd", lookup("AMD Instinct MI250X", (-1, -1), 110, 64 * GIB)),
    ("mi325x", lookup("AMD Instinct MI325X", (-1, -1), 304, 256 * GIB)),
    ("mi355x", lookup("AMD Instinct MI355X", (-1, -1), 256, 288 * GIB)),
    ("rocm_gfx_name", lookup("AMD Radeon Graphics gfx942", (-1, -1), 304)),
    ("a30", lookup("NVIDIA A30", (8, 0), 56, 24 * GIB)),
    ("l20", lookup("NVIDIA L20", (8, 9), 92, 45 * GIB)),
    ("rtx6000_ada", lookup("NVIDIA RTX 6000 Ada Generation", (8, 9), 142, 48 * GIB)),
    ("rtx_pro_6000", lookup("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", (12, 0), 188,
                            97886 * 2**20)),
    ("rtx_pro_6000_maxq", lookup("NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition",
                                 (12, 0), 188)),
    ("quadro_rtx_6000", lookup("Quadro RTX 6000", (7, 5), 72, 24 * GIB)),
    ("v100s", lookup("Tesla V100S-PCIE-32GB", (7, 0), 80, 32 * GIB)),
    ("p100_sxm2", lookup("Tesla P100-SXM2-16GB", (6, 0), 56, 16 * GIB)),
    ("p100_pcie12", lookup("Tesla P100-PCIE-12GB", (6, 0), 56, 12 * GIB)),
    ("h800_pcie", lookup("NVIDIA H800 PCIe", (9, 0), 114, 80 * GIB)),
    ("h100_bare_nvl_memory", lookup("NVIDIA H100", (9, 0), 132, 94 * GIB)),
    ("mi210", lookup("AMD Instinct MI210", (-1, -1), 104, 64 * GIB)),
    ("mi350x", lookup("AMD Instinct MI350X", (-1, -1), 256, 288 * GIB)),
    # display names (rule 0: no hint, case and blanks around ignored)
    ("display_h100_sxm", lookup("H100 SXM")),
    ("display_blanks_case", lookup(" \ta100 PCIE 80gb \r\n")),
    ("display_mi250x_gcd", lookup("MI250X (per GCD)")),
    ("display_with_hint", lookup("H100 SXM", (9, 0), 114)),
    # the rules' traps
    ("a10_not_a100", lookup("A10", (8, 0), 108)),
    ("b200_in_gb200", lookup("GB200")),
    ("h100_in_gh200", lookup("GH200")),
    ("cc_mismatch", lookup("NVIDIA H100 80GB HBM3", (8, 0), 132)),
    ("memory_off", lookup("NVIDIA A100-SXM4-40GB", (8, 0), 108, 8 * GIB)),
    ("unknown_device", lookup("NVIDIA Quadro P1000", (6, 1), 4, 4 * GIB)),
    ("cpu_name", lookup("cpu")),
    # bad names and hints
    ("empty_name", lookup("")),
    ("vendor_only", lookup("NVIDIA GeForce")),
    ("separators_only", lookup(" -_/.:() ")),
    ("utf8", lookup("NVIDIA H100 \u2122 80GB \u00e9")),
    ("control_chars", lookup(b"NVIDIA\tH100\nSXM5\r\x01\x7f\xff")),
    ("embedded_nul", lookup(b"NVIDIA A100\x00-SXM4-80GB")),
    ("name_256", lookup("a" * 251 + " h100")),
    ("name_257", lookup("a" * 252 + " h100")),
    ("name_unterminated", lookup("h100 " * 80, flags=1)),
    ("tokens_max", lookup("a " * 128)),
    ("sms_int_max", lookup("NVIDIA H100 80GB HBM3", (9, 0), I32_MAX, 79 * GIB)),
    ("sms_int_min", lookup("NVIDIA H100 80GB HBM3", (9, 0), I32_MIN)),
    ("sms_zero", lookup("NVIDIA H100 80GB HBM3", (9, 0), 0)),
    ("sms_negative", lookup("NVIDIA H100 80GB HBM3", (9, 0), -5)),
    ("mig_sms_huge", lookup("NVIDIA H100 MIG 7g.80gb", (9, 0), I32_MAX)),
    ("mig_no_sms", lookup("NVIDIA H100 MIG 7g.80gb", (9, 0), -1)),
    ("memory_u64_max", lookup("NVIDIA H100 80GB HBM3", (9, 0), 132, U64_MAX)),
    ("memory_one_byte", lookup("NVIDIA H100 80GB HBM3", (9, 0), 132, 1)),
    ("cc_100", lookup("NVIDIA H100", (100, 0), 132)),
    ("cc_minus2", lookup("NVIDIA H100", (-2, 0), 132)),
    ("cc_int_min", lookup("NVIDIA H100", (I32_MIN, I32_MAX), 132)),
    ("amd_partition_not_divisor", lookup("AMD Instinct MI300X", (-1, -1), 303)),
]

# ---- fuzz_normalize: size selector, flags, name ----------------------------

def norm(name, out_size=253, flags=0):
    if isinstance(name, str):
        name = name.encode()
    return u8(out_size) + u8(flags) + name


NORMALIZE = [
    ("a100_mig_full", norm("NVIDIA A100-SXM4-40GB MIG 3g.20gb", 252)),
    ("a100_mig_exact", norm("NVIDIA A100-SXM4-40GB MIG 3g.20gb", 27)),   # 26 chars + NUL
    ("a100_mig_short", norm("NVIDIA A100-SXM4-40GB MIG 3g.20gb", 26)),
    ("h100_size0", norm("NVIDIA H100", 0)),
    ("h100_size1", norm("NVIDIA H100", 1)),
    ("h100_size4", norm("NVIDIA H100", 4)),
    ("h100_size5", norm("NVIDIA H100", 5)),
    ("huge_buffer", norm("AMD Instinct MI300X", 255)),
    ("vendor_words", norm("NVIDIA Tesla GeForce AMD Instinct Radeon")),
    ("vendor_case", norm("nViDiA gEfOrCe RTX 4090")),
    ("dtype_bf16", norm("bf16")),
    ("dtype_upper", norm("BF16")),
    ("dtype_fp8", norm("Fp8")),
    ("dtype_prefix", norm("bf1")),
    ("dtype_long", norm("bf16" * 9)),
    ("max_len", norm("x" * 256, 252)),
    ("over_max", norm("x" * 257, 252)),
    ("unterminated", norm("x" * 400, 252, flags=1)),
    ("many_tokens", norm("a-" * 128, 252)),
    ("high_bytes", norm(bytes(range(128, 256)))),
    ("all_bytes", norm(bytes(range(1, 256)))),
    ("empty", norm("")),
]

# ---- fuzz_override: flags, text --------------------------------------------

def ovr(text, flags=0):
    if isinstance(text, str):
        text = text.encode()
    return u8(flags) + text


OVERRIDE = [
    ("single", ovr("989.4")),
    ("single_blanks", ovr(" \t312 \t")),
    ("list", ovr("bf16=989.4, fp8=1978.9")),
    ("list_all", ovr("fp64=1,fp32=2,tf32=3,fp16=4,bf16=5,fp8=6,int8=7,int4=8,fp4=9")),
    ("list_case", ovr("BF16=989.4,Fp8=1978.9")),
    ("thousands_sep", ovr("bf16=1,300")),
    ("duplicate", ovr("bf16=1,bf16=2")),
    ("trailing_comma", ovr("bf16=1,")),
    ("empty_item", ovr("bf16=1,,fp8=2")),
    ("empty_value", ovr("bf16=")),
    ("empty_key", ovr("=5")),
    ("double_eq", ovr("bf16==5")),
    ("unknown_dtype", ovr("bfloat16=5")),
    ("inf", ovr("inf")),
    ("nan", ovr("nan")),
    ("hex", ovr("0x10")),
    ("exp", ovr("1e3")),
    ("exp_overflow", ovr("1e309")),
    ("exp_underflow", ovr("1e-400")),
    ("denormal", ovr("4e-320")),
    ("max_double", ovr("1.7976931348623157e308")),
    ("zero", ovr("0")),
    ("negative", ovr("-5")),
    ("plus", ovr("+5")),
    ("dot", ovr(".")),
    ("signs", ovr("+-1")),
    ("long_number", ovr("1" * 63)),
    ("longer_number", ovr("1" * 64)),
    ("text_1024", ovr("bf16=1," + " " * 1016 + "x")),
    ("text_1025", ovr("9" * 1025)),
    ("unterminated", ovr("5" * 1100, flags=1)),
    ("embedded_nul", ovr(b"bf16=5\x00,fp8=6")),
    ("empty", ovr("")),
]

# ---- fuzz_flops: op, flags, values ------------------------------------------

def flop(op, flags, *vals):
    return u8(op) + u8(flags) + b"".join(vals)


def shape(*dims):
    return b"".join(i64(d) for d in dims)


def conv(op, ndim, bits, groups, x, w, o, flags=0):
    body = b"".join(i64(x[i]) + i64(w[i]) + i64(o[i]) for i in range(ndim))
    return u8(op) + u8(flags) + u8(ndim) + u8(bits) + i64(groups) + body


def sdpa(op, causal, b, hq, hkv, sq, skv, dqk, dv, flags=0):
    c = {0: 0, 1: 120, "bad": 241}[causal]
    return u8(op) + u8(flags) + u8(c) + shape(b, hq, hkv, sq, skv, dqk, dv)


def varlen(op, causal, hq, hkv, dqk, dv, cu_q, cu_k=None, null_q=False, flags=0):
    which = (1 if cu_k is not None else 0) | (6 if null_q else 0)
    c = {0: 0, 1: 120, "bad": 241}[causal]
    body = b""
    for i, q in enumerate(cu_q):
        body += i64(q) + (i64(cu_k[i]) if cu_k is not None else b"")
    return (u8(op) + u8(flags) + u8(len(cu_q)) + u8(which) + u8(c)
            + shape(hq, hkv, dqk, dv) + body)


def masked(op, causal, b, hq, hkv, sq, skv, dqk, dv, left, right, chunk, flags=0):
    c = {0: 0, 1: 120}[causal]
    return (u8(op) + u8(flags) + u8(c) + shape(b, hq, hkv, sq, skv, dqk, dv)
            + shape(left, right, chunk))


def pairs(how, causal, sq, sk, left, right, chunk):
    """The pairs rule itself (fuzz_flops op 15): shape byte, lengths, mask, convention."""
    c = {0: 0, 1: 120}[causal]
    return u8(15) + u8(0) + u8(how) + shape(sq, sk, left, right, chunk) + u8(c)


def block(op, dims, mb, mh, qb, kvb, full, qsize, kvsize, counts, cells, flags=0):
    """counts: per row (partial, full); cells: per row ([partial indices],
    [full indices]); values are sent as byte = value + 2 (fuzz_block)."""
    body = b"".join(u8(p + 2) + u8(f + 2) for p, f in counts)
    body += b"".join(u8(a + 2) + u8(b + 2) for pi, fi in cells for a, b in zip(pi, fi))
    return (u8(op) + u8(flags) + shape(*dims) + u8(mb - 1) + u8(mh - 1) + u8(qb) + u8(kvb)
            + u8(1 if full else 0) + shape(qsize, kvsize) + body)


FLOPS = [
    # mm / addmm (b unused) / bmm / baddbmm: b, m, k, n
    ("mm_llama_mlp", flop(0, 0, shape(0, 4096, 4096, 11008))),
    ("addmm_gpt2", flop(1, 0, shape(0, 8192, 768, 3072))),
    ("bmm_attention", flop(2, 0, shape(32, 2048, 128, 2048))),
    ("baddbmm", flop(3, 2, shape(16, 1024, 64, 1024))),
    ("mm_negative", flop(0, 0, shape(0, -1, 4096, 4096))),
    ("mm_int64_max", flop(0, 0, shape(0, I64_MAX, 1, 1))),
    ("mm_exact_max", flop(0, 0, shape(0, 1, 1, 2**62 - 1))),        # 2^63 - 2
    ("mm_just_over", flop(0, 0, shape(0, 1, 1, 2**62))),            # 2^63
    ("mm_zero_dim_huge_others", flop(0, 0, shape(0, 2**62, 0, 4))),  # 0 FLOPs
    ("bmm_zero_batch", flop(2, 0, shape(0, I64_MAX, I64_MAX, I64_MAX))),
    ("bmm_int64_min", flop(2, 2, shape(I64_MIN, 1, 1, 1))),
    # grouped_mm: a_ndim, b_ndim, a, b
    ("grouped_2x3_moe", flop(4, 0, u8(2) + u8(3) + shape(8192, 4096, 8, 4096, 14336))),
    ("grouped_3x3", flop(4, 0, u8(3) + u8(3) + shape(8, 1024, 4096, 8, 4096, 14336))),
    ("grouped_3x2", flop(4, 0, u8(3) + u8(2) + shape(8, 1024, 4096, 4096, 14336))),
    ("grouped_2x2", flop(4, 0, u8(2) + u8(2) + shape(1024, 4096, 4096, 14336))),
    ("grouped_k_mismatch", flop(4, 0, u8(2) + u8(3) + shape(64, 32, 8, 31, 16))),
    ("grouped_negative_groups", flop(4, 0, u8(2) + u8(3) + shape(64, 32, -8, 32, 16))),
    ("grouped_negative_g_3x2", flop(4, 0, u8(3) + u8(2) + shape(-1, 64, 32, 32, 16))),
    ("grouped_bad_ndim", flop(4, 0, u8(4) + u8(1) + shape(1, 2, 3, 4, 5))),
    # convolution: ndim, bits (transposed | want_in<<1 | want_w<<2), groups, x/w/out
    ("conv2d_resnet_stem", conv(5, 4, 0, 1, (32, 3, 224, 224), (64, 3, 7, 7), (32, 64, 112, 112))),
    ("conv1d", conv(5, 3, 0, 1, (8, 16, 1000), (32, 16, 3), (8, 32, 998))),
    ("conv3d", conv(5, 5, 0, 1, (2, 4, 16, 64, 64), (8, 4, 3, 3, 3), (2, 8, 14, 62, 62))),
    ("conv_transposed", conv(5, 4, 1, 1, (4, 64, 32, 32), (64, 32, 4, 4), (4, 32, 64, 64))),
    ("conv_ndim2", conv(5, 2, 0, 1, (1, 1), (1, 1), (1, 1))),
    ("conv_ndim9", conv(5, 9, 0, 1, (1,) * 9, (1,) * 9, (1,) * 9)),
    ("conv_overflow", conv(5, 4, 0, 1, (I64_MAX, 3, 224, 224), (64, 3, 7, 7), (I64_MAX, 64, 112, 112))),
    ("conv_zero_kernel_huge_out", conv(5, 4, 0, 1, (1, 3, 8, 8), (64, 3, 0, 7), (1, 64, 2**40, 2**40))),
    ("conv_bwd_both", conv(6, 4, 6, 1, (32, 3, 224, 224), (64, 3, 7, 7), (32, 64, 112, 112))),
    ("conv_bwd_depthwise", conv(6, 4, 6, 32, (8, 32, 56, 56), (32, 1, 3, 3), (8, 32, 54, 54))),
    ("conv_bwd_transposed", conv(6, 4, 7, 2, (4, 64, 32, 32), (64, 16, 4, 4), (4, 32, 64, 64))),
    ("conv_bwd_groups0", conv(6, 4, 6, 0, (8, 32, 56, 56), (32, 1, 3, 3), (8, 32, 54, 54))),
    ("conv_bwd_groups_nodiv", conv(6, 4, 6, 3, (8, 32, 56, 56), (32, 1, 3, 3), (8, 32, 54, 54))),
    ("conv_bwd_groups_min", conv(6, 4, 6, I64_MIN, (8, 32, 56, 56), (32, 1, 3, 3), (8, 32, 54, 54))),
    ("conv_bwd_neither", conv(6, 4, 0, 1, (8, 32, 56, 56), (32, 32, 3, 3), (8, 32, 54, 54))),
    # sdpa: causal, b, h, h_kv, s_q, s_kv, d_qk, d_v
    ("sdpa_llama_gqa", sdpa(7, 0, 8, 32, 8, 4096, 4096, 128, 128)),
    ("sdpa_half", sdpa(7, 1, 8, 32, 8, 4096, 4096, 128, 128)),
    ("sdpa_decode", sdpa(7, 1, 64, 32, 32, 1, 8191, 128, 128)),
    ("sdpa_mla_dims", sdpa(7, 0, 4, 128, 128, 2048, 2048, 192, 128)),
    ("sdpa_bad_causal", sdpa(7, "bad", 1, 1, 1, 1, 1, 1, 1)),
    ("sdpa_gqa_nodiv", sdpa(7, 0, 1, 32, 5, 128, 128, 64, 64)),
    ("sdpa_kv_zero", sdpa(7, 0, 1, 32, 0, 128, 128, 64, 64)),
    ("sdpa_half_fits_full_not", sdpa(7, 1, 1, 1, 1, 2**31, 2**30, 1, 1)),  # full 2^63
    ("sdpa_zero_dims_huge_rect", sdpa(7, 0, I64_MAX, 1, 1, I64_MAX, I64_MAX, 0, 0)),
    ("sdpa_bwd", sdpa(8, 0, 8, 32, 8, 4096, 4096, 128, 128)),
    ("sdpa_bwd_overflow", sdpa(8, 0, 2**20, 2**10, 1, 2**20, 2**20, 128, 128)),
    # varlen: causal, h, h_kv, d_qk, d_v, cu_seqlens
    ("varlen_packed", varlen(9, 0, 32, 8, 128, 128, [0, 100, 612, 1024])),
    ("varlen_half", varlen(9, 1, 32, 8, 128, 128, [0, 100, 612, 1024])),
    ("varlen_separate_k", varlen(9, 0, 16, 16, 64, 64, [0, 5, 10], [0, 50, 100])),
    ("varlen_empty_seqs", varlen(9, 0, 16, 16, 64, 64, [0, 0, 0, 7, 7])),
    ("varlen_decreasing", varlen(9, 0, 16, 16, 64, 64, [0, 10, 5])),
    ("varlen_negative", varlen(9, 0, 16, 16, 64, 64, [-1, 10])),
    ("varlen_null", varlen(9, 0, 16, 16, 64, 64, [0, 10], null_q=True)),
    ("varlen_none", varlen(9, 0, 16, 16, 64, 64, [])),
    ("varlen_one_offset", varlen(9, 0, 16, 16, 64, 64, [5])),
    ("varlen_overflow_sum", varlen(9, 0, 1, 1, 1, 1, [0, 2**30, 2**31, 2**31 + 2**30])),
    ("varlen_overflow_then_decrease", varlen(9, 0, 1, 1, 1, 1, [0, 2**62, 0])),
    ("varlen_bwd", varlen(10, 0, 32, 8, 128, 128, [0, 100, 612, 1024])),
    ("varlen_bwd_half_mono", varlen(10, 1, 4, 2, 64, 64, [0, 3, 4, 9, 9, 16], flags=1)),
    # masked attention: causal, b, h, h_kv, s_q, s_kv, d_qk, d_v, left, right, chunk
    ("masked_mistral_window", masked(11, 0, 8, 32, 8, 8192, 8192, 128, 128, 4095, 0, 0)),
    ("masked_mistral_half", masked(11, 1, 8, 32, 8, 8192, 8192, 128, 128, 4095, 0, 0)),
    ("masked_gemma_local", masked(11, 1, 4, 8, 4, 2048, 2048, 256, 256, 1023, 0, 0)),
    ("masked_window_wider", masked(11, 1, 1, 1, 1, 64, 64, 8, 8, 4096, 0, 0)),
    ("masked_llama4_chunk", masked(11, 1, 1, 40, 8, 16384, 16384, 128, 128, -1, 0, 8192)),
    ("masked_chunk_small", masked(11, 0, 1, 1, 1, 37, 37, 1, 1, -1, 0, 5, flags=1)),
    ("masked_two_sided", masked(11, 1, 1, 1, 1, 33, 33, 1, 1, 3, 4, 0)),
    ("masked_decode", masked(11, 1, 1, 1, 1, 3, 40, 1, 1, 7, 0, 16)),
    ("masked_more_queries", masked(11, 0, 1, 1, 1, 40, 9, 1, 1, 2, 0, 4)),
    ("masked_chunk_huge", masked(11, 0, 1, 1, 1, 40, 9, 1, 1, -1, -1, I64_MAX)),
    ("masked_span_limit", masked(11, 0, 1, 1, 1, 2**62, 2**62, 1, 1, 7, 0, 0)),
    ("masked_no_work_huge", masked(11, 1, 0, 1, 1, I64_MAX, I64_MAX, 1, 1, 7, 0, 3)),
    ("masked_bwd", masked(12, 1, 2, 16, 4, 4096, 4096, 128, 128, 511, 0, 0)),
    # the pairs rule (pairs.h): shape byte, causal, s_q, s_k, left, right, chunk
    ("pairs_small_window", pairs(1, 1, 9, 9, 2, 0, 0)),
    ("pairs_two_sided", pairs(1, 0, 7, 7, 2, 2, 0)),
    ("pairs_decode_long_keys", pairs(2, 1, 3, 2**62 + 5, 7, 0, 16)),
    ("pairs_queries_past_keys", pairs(3, 0, 2**62, 9, 2, 0, 4)),
    ("pairs_queries_past_keys_half", pairs(3, 1, I64_MAX, 40, -1, 3, 5)),
    ("pairs_mistral_window_huge", pairs(4, 1, I64_MAX, I64_MAX, 4095, 0, 0)),
    ("pairs_llama4_chunk_huge", pairs(4, 0, 2**62 + 3, 2**62 + 3, -1, 0, 8192)),
    ("pairs_chunk_past_keys", pairs(4, 1, 2**62, 2**62, -1, 0, I64_MAX)),
    ("pairs_rectangle_max", pairs(0, 0, I64_MAX, I64_MAX, -1, -1, 0)),
    ("pairs_causal_half_max", pairs(0, 1, I64_MAX, I64_MAX, -1, 0, 0)),
    ("pairs_negative_length", pairs(0, 0, -1, 4, 2, 0, 0)),
    # block attention: b, h, h_kv, s_q, s_kv, d_qk, d_v, then the mask
    ("block_causal_256", block(13, (1, 2, 2, 256, 256, 16, 16), 1, 1, 2, 2, True, 128, 128,
                               [(1, 0), (1, 1)], [([0, 0], [0, 0]), ([1, 0], [0, 0])])),
    ("block_ragged_tiles", block(13, (2, 4, 2, 10, 8, 16, 16), 1, 1, 3, 2, True, 4, 4,
                                 [(1, 0), (1, 1), (1, 0)],
                                 [([0, 0], [0, 0]), ([0, 0], [1, 0]), ([1, 0], [0, 0])])),
    ("block_negative_index", block(13, (1, 1, 1, 8, 8, 1, 1), 1, 1, 2, 2, False, 4, 4,
                                   [(1, 0), (2, 0)], [([-1, 0], [0, 0]), ([0, 1], [0, 0])])),
    ("block_count_past_row", block(14, (1, 1, 1, 8, 8, 1, 1), 1, 1, 1, 2, False, 4, 4,
                                   [(3, 0)], [([0, 1], [0, 0])])),
]

# ---- fuzz_ops: row, flags, nargs, then each argument ---------------------------

def _op_rows():
    """The table's op names in row order (csrc/core/ops/op_table.c)."""
    import re
    with open(os.path.join(HERE, "..", "..", "..", "csrc", "core", "ops", "op_table.c")) as f:
        return re.findall(r'"((?:aten|torch_attn|flash_attn|flash_attn_3|higher_order)::\w+)"',
                          f.read())


OP_ROWS = _op_rows()
NONE = u8(0)


def t(*dims, grad=False, values=None):
    bits = (1 if grad else 0) | (2 if values is not None else 0)
    body = b"".join(i64(d) for d in dims) + b"".join(i64(v) for v in values or ())
    return u8(1) + u8(len(dims)) + u8(bits) + body


def n(v):
    return u8(2) + i64(v)


def ints(*vals):
    return u8(3) + u8(len(vals)) + b"".join(i64(v) for v in vals)


NODES = {"unknown": 0, "builtin": 1, "custom": 2, "checkpoint": 3, "bad": 4}


def call(op, *args, causal="full", backward=False, grad=True, node=None, hooks=False,
         recomputed=False):
    """fuzz_ops' layout; `node` (ops.h mfu_op_node), `hooks` and `recomputed`
    go in the byte after the arguments (absent: node unknown)."""
    row = OP_ROWS.index(op) if op is not None else 255
    flags = {"full": 0, "half": 1, "bad": 2}[causal] | (4 if backward else 0) | (0 if grad else 8)
    out = u8(row) + u8(flags) + u8(len(args)) + b"".join(args)
    if node is not None:
        out += u8(NODES[node] | (8 if hooks else 0) | (16 if recomputed else 0))
    return out


def conv_args(x, w, stride, padding, dilation, transposed, grad=True):
    return (t(*x, grad=grad), t(*w, grad=True), NONE, ints(*stride), ints(*padding),
            ints(*dilation), n(int(transposed)), ints(0, 0), n(1))


LLAMA_Q = (8, 32, 4096, 128)  # [b, h, s, d]
LLAMA_KV = (8, 8, 4096, 128)
OPS = [
    # matmul family, real shapes
    ("mm_llama_mlp", call("aten::mm", t(4096, 4096, grad=True), t(4096, 11008, grad=True))),
    ("addmm_gpt2", call("aten::addmm", t(3072), t(8192, 768, grad=True), t(768, 3072, grad=True))),
    ("addmm_frozen", call("aten::addmm", t(3072), t(8192, 768), t(768, 3072))),
    ("bmm_attention_scores", call("aten::bmm", t(256, 2048, 128, grad=True), t(256, 128, 2048, grad=True))),
    ("baddbmm", call("aten::baddbmm", t(16, 64, 64), t(16, 64, 32), t(16, 32, 64))),
    ("grouped_mm_moe", call("aten::_grouped_mm", t(8192, 4096, grad=True), t(8, 4096, 14336, grad=True),
                            t(8, values=[1024 * i for i in range(1, 9)]))),
    ("scaled_mm_fp8", call("aten::_scaled_mm", t(8192, 4096), t(4096, 4096), t(), t())),
    ("mm_overflow", call("aten::mm", t(2**31, 2**31), t(2**31, 2**31))),
    ("mm_exact_max", call("aten::mm", t(1, 1, grad=True), t(1, 2**62 - 1, grad=True))),
    ("mm_negative", call("aten::mm", t(-1, 4), t(4, 4))),
    ("mm_inner_mismatch", call("aten::mm", t(4, 5), t(6, 7))),
    ("mm_int_operand", call("aten::mm", n(3), t(4, 4))),
    ("mm_no_args", call("aten::mm")),
    ("mm_backward_phase", call("aten::mm", t(64, 64, grad=True), t(64, 64, grad=True), backward=True)),
    ("mm_no_grad", call("aten::mm", t(64, 64, grad=True), t(64, 64, grad=True), grad=False)),
    # sites (ops.h): a custom Function's backward, the two recomputes, a
    # compiled backward's recomputed node, a node kind out of range
    ("mm_custom_backward", call("aten::mm", t(64, 64), t(64, 64), backward=True, grad=False,
                                node="custom")),
    ("mm_reentrant_recompute", call("aten::mm", t(64, 64, grad=True), t(64, 64, grad=True),
                                    backward=True, node="checkpoint")),
    ("mm_non_reentrant_recompute", call("aten::mm", t(64, 64, grad=True), t(64, 64, grad=True),
                                        backward=True, node="builtin", hooks=True)),
    ("mm_compiled_recomputed", call("aten::mm", t(64, 64), t(64, 64), backward=True, grad=False,
                                    node="custom", recomputed=True)),
    ("mm_bad_node", call("aten::mm", t(64, 64), t(64, 64), backward=True, node="bad")),
    # the math path under causal "half": executed full, model half, over-compute
    ("sdpa_math_half", call("aten::_scaled_dot_product_attention_math",
                            t(8, 32, 4096, 128, grad=True), t(8, 8, 4096, 128, grad=True),
                            t(8, 8, 4096, 128, grad=True), NONE, NONE, n(1), causal="half")),
    # convolutions
    ("conv_resnet_stem", call("aten::convolution", *conv_args((32, 3, 224, 224), (64, 3, 7, 7),
                                                              (2, 2), (3, 3), (1, 1), False, grad=False))),
    ("conv1d_dilated", call("aten::convolution", *conv_args((2, 4, 256), (6, 4, 5), (1,), (0,), (2,), False))),
    ("conv3d", call("aten::_convolution", *conv_args((2, 4, 16, 64, 64), (8, 4, 3, 3, 3),
                                                     (1,), (1,), (1,), False))),
    ("conv_transposed", call("aten::convolution", *conv_args((4, 64, 32, 32), (64, 32, 4, 4),
                                                             (2, 2), (1, 1), (1, 1), True))),
    ("conv_kernel_too_big", call("aten::convolution", *conv_args((1, 3, 4, 4), (8, 3, 9, 9),
                                                                 (1,), (0,), (1,), False))),
    ("conv_zero_kernel", call("aten::convolution", *conv_args((1, 3, 4, 4), (8, 3, 0, 0),
                                                              (1,), (0,), (4,), False))),
    ("conv_padding_overflow", call("aten::convolution", *conv_args((1, 3, 8, 8), (8, 3, 3, 3),
                                                                   (1,), (I64_MAX // 2,), (1,), False))),
    ("conv_dilation_overflow", call("aten::convolution", *conv_args((1, 3, 8, 8), (8, 3, 2**40, 3),
                                                                    (1,), (0,), (2**40,), False))),
    ("conv_stride_zero", call("aten::convolution", *conv_args((1, 3, 8, 8), (8, 3, 3, 3),
                                                              (0,), (0,), (1,), False))),
    ("conv_stride_three_values", call("aten::convolution", *conv_args((1, 3, 8, 8), (8, 3, 3, 3),
                                                                      (1, 1, 1), (0,), (1,), False))),
    ("conv_stride_int", call("aten::convolution", t(1, 3, 8, 8), t(8, 3, 3, 3), NONE, n(2))),
    ("cudnn_convolution", call("aten::cudnn_convolution", t(8, 64, 56, 56), t(64, 64, 3, 3, grad=True),
                               ints(1, 1), ints(1, 1), ints(1, 1), n(1))),
    ("slow_conv2d", call("aten::_slow_conv2d_forward", t(2, 3, 8, 8), t(4, 3, 3, 3), ints(3, 3), NONE,
                         ints(1, 1), ints(0, 0))),
    ("conv_bwd_depthwise", call("aten::convolution_backward", t(8, 32, 54, 54), t(8, 32, 56, 56),
                                t(32, 1, 3, 3), NONE, ints(1, 1), ints(0, 0), ints(1, 1), n(0),
                                ints(0, 0), n(32), ints(1, 1, 0), backward=True)),
    ("conv_bwd_weight_only", call("aten::convolution_backward", t(2, 4, 6, 6), t(2, 3, 8, 8),
                                  t(4, 3, 3, 3), NONE, NONE, NONE, NONE, n(0), NONE, n(1),
                                  ints(0, 1, 0))),
    ("conv_bwd_groups_nodiv", call("aten::convolution_backward", t(2, 4, 6, 6), t(2, 3, 8, 8),
                                   t(4, 3, 3, 3), NONE, NONE, NONE, NONE, n(0), NONE, n(2))),
    # SDPA family, q: [b, h, s, d]
    ("sdpa_llama_gqa_causal", call("aten::_scaled_dot_product_flash_attention_for_cpu",
                                   t(*LLAMA_Q, grad=True), t(*LLAMA_KV, grad=True), t(*LLAMA_KV, grad=True),
                                   NONE, n(1))),
    ("sdpa_half", call("aten::_scaled_dot_product_flash_attention",
                       t(*LLAMA_Q), t(*LLAMA_KV), t(*LLAMA_KV), NONE, n(1), causal="half")),
    ("sdpa_bad_convention", call("aten::_scaled_dot_product_flash_attention",
                                 t(1, 1, 1, 1), t(1, 1, 1, 1), t(1, 1, 1, 1), causal="bad")),
    ("sdpa_efficient", call("aten::_scaled_dot_product_efficient_attention",
                            t(2, 8, 512, 64), t(2, 8, 512, 64), t(2, 8, 512, 64), NONE, n(1), NONE, n(1))),
    ("sdpa_gqa_nodiv", call("aten::_scaled_dot_product_cudnn_attention",
                            t(1, 32, 128, 64), t(1, 5, 128, 64), t(1, 5, 128, 64))),
    ("sdpa_math_3d", call("aten::_scaled_dot_product_attention_math", t(8, 128, 64), t(8, 128, 64),
                          t(8, 128, 64))),
    ("sdpa_bwd", call("aten::_scaled_dot_product_flash_attention_for_cpu_backward",
                      t(*LLAMA_Q), t(*LLAMA_Q), t(*LLAMA_KV), t(*LLAMA_KV), NONE, NONE, NONE, n(1),
                      backward=True)),
    ("sdpa_bwd_overflow", call("aten::_scaled_dot_product_efficient_attention_backward",
                               t(1), t(2**20, 2**10, 2**20, 128), t(2**20, 1, 2**20, 128),
                               t(2**20, 1, 2**20, 128))),
    # kernel-level attention, q: [b, s, h, d] or packed
    ("flash_bshd", call("aten::_flash_attention_forward", t(2, 8, 4, 16, grad=True), t(2, 8, 4, 16),
                        t(2, 8, 4, 16), NONE, NONE, n(8), n(8), NONE, n(1))),
    ("flash_packed", call("aten::_flash_attention_forward", t(10, 4, 8), t(10, 2, 8), t(10, 2, 8),
                          t(3, values=[0, 3, 10]), t(3, values=[0, 3, 10]), n(7), n(7), NONE, n(1))),
    ("flash_packed_meta", call("aten::_flash_attention_forward", t(10, 4, 8), t(10, 2, 8), t(10, 2, 8),
                               t(3), t(3), n(7), n(7), NONE, n(1))),
    ("flash_packed_meta_huge", call("aten::_flash_attention_forward", t(10, 4, 8), t(10, 2, 8),
                                    t(10, 2, 8), t(2**40), t(2**40), n(2**40), n(2**40))),
    ("flash_packed_lengths_differ", call("aten::_flash_attention_forward", t(10, 4, 8), t(10, 4, 8),
                                         t(10, 4, 8), t(3, values=[0, 3, 10]), t(2, values=[0, 10]))),
    ("flash_packed_decreasing", call("aten::_flash_attention_forward", t(10, 4, 8), t(10, 4, 8),
                                     t(10, 4, 8), t(3, values=[0, 7, 3]), NONE)),
    ("flash_packed_overflow", call("aten::_flash_attention_forward", t(1, 1, 1), t(1, 1, 1), t(1, 1, 1),
                                   t(4, values=[0, 2**30, 2**31, 2**31 + 2**30]), NONE)),
    ("flash_bwd_packed", call("aten::_flash_attention_backward", t(10, 4, 8), t(10, 4, 8), t(10, 4, 8),
                              t(10, 4, 8), NONE, NONE, t(3, values=[0, 3, 10]), t(3, values=[0, 3, 10]),
                              n(7), n(7), NONE, n(1), backward=True)),
    ("efficient_mask_type", call("aten::_efficient_attention_forward", t(2, 8, 4, 16), t(2, 8, 4, 16),
                                 t(2, 8, 4, 16), NONE, NONE, NONE, NONE, NONE, NONE, n(2), causal="half")),
    ("efficient_packed_4d", call("aten::_efficient_attention_forward", t(1, 10, 4, 8), t(1, 10, 4, 8),
                                 t(1, 10, 4, 8), NONE, t(3, values=[0, 4, 10]), t(3, values=[0, 4, 10]),
                                 n(6), n(6), NONE, n(1))),
    # flash-attn 2 / 3: causal and window_size, chunks
    ("fa2_window", call("flash_attn::_flash_attn_forward", t(2, 8192, 32, 128, grad=True),
                        t(2, 8192, 8, 128), t(2, 8192, 8, 128), NONE, NONE, n(1), n(4095), n(-1),
                        causal="half")),
    ("fa2_varlen_window", call("flash_attn::_flash_attn_varlen_forward", t(10, 4, 8), t(10, 2, 8),
                               t(10, 2, 8), t(3, values=[0, 3, 10]), t(3, values=[0, 3, 10]),
                               n(7), n(7), NONE, NONE, n(1), n(2), n(0))),
    ("fa2_varlen_bwd_meta", call("flash_attn::_flash_attn_varlen_backward", t(10, 4, 8),
                                 t(10, 4, 8), t(10, 4, 8), t(10, 4, 8), NONE, NONE, NONE, NONE,
                                 NONE, t(3), t(3), n(7), n(7), NONE, NONE, n(0), n(2), n(2),
                                 backward=True)),
    ("fa3_chunk", call("flash_attn_3::fwd", t(1, 64, 8, 64), t(1, 64, 8, 64), t(1, 64, 8, 64),
                       *[NONE] * 21, n(1), n(-1), n(0), n(16), causal="half")),
    # flex_attention flattened: q, k, v, counts, indices, full counts, full indices, blocks
    ("flex_blocks", call("higher_order::flex_attention", t(1, 2, 8, 16), t(1, 2, 8, 16),
                         t(1, 2, 8, 16), t(1, 1, 2, values=[1, 2]),
                         t(1, 1, 2, 2, values=[0, 0, 0, 1]), NONE, NONE, n(4), n(4))),
    ("flex_blocks_meta", call("higher_order::flex_attention", t(1, 2, 8, 16), t(1, 2, 8, 16),
                              t(1, 2, 8, 16), t(1, 1, 2), t(1, 1, 2, 2), NONE, NONE, n(4), n(4))),
    ("flex_bwd_full_blocks", call("higher_order::flex_attention_backward", t(1, 2, 8, 16),
                                  t(1, 2, 8, 16), t(1, 2, 8, 16), t(1, 1, 2, values=[1, 0]),
                                  t(1, 1, 2, 2, values=[0, 0, 0, 0]), t(1, 1, 2, values=[0, 2]),
                                  t(1, 1, 2, 2, values=[0, 0, 0, 1]), n(4), n(4),
                                  backward=True)),
    ("varlen_thd", call("torch_attn::_varlen_attn", t(10, 4, 8), t(10, 2, 8), t(10, 2, 8),
                        t(3, values=[0, 3, 10]), NONE, n(7), n(7), n(1), causal="half")),
    ("varlen_no_lengths", call("torch_attn::_varlen_attn", t(10, 4, 8), t(10, 2, 8), t(10, 2, 8))),
    ("varlen_offsets_2d", call("torch_attn::_varlen_attn", t(10, 4, 8), t(10, 2, 8), t(10, 2, 8),
                               t(3, 1))),
    ("varlen_bwd_meta", call("torch_attn::_varlen_attn_backward", t(10, 4, 8), t(10, 4, 8), t(10, 4, 8),
                             t(10, 4, 8), NONE, NONE, t(5), t(5), n(3), n(3), n(0), backward=True)),
    # no row at all
    ("null_row", call(None, t(4, 4), t(4, 4))),
]

# ---- fuzz_transformer: mode, dims, flags, enums, options, vision, lengths ----

# fuzz_transformer.c's int_fields / flag_fields / vision_fields, in order.
TFM_INTS = ("hidden_size", "num_layers", "vocab_size", "num_heads", "num_kv_heads", "head_dim",
            "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim",
            "intermediate_size", "norms_per_layer", "num_experts", "experts_per_token",
            "moe_intermediate_size", "shared_expert_intermediate_size", "num_dense_layers",
            "num_positions", "sliding_window", "num_sliding_layers", "attention_chunk_size",
            "num_chunked_layers", "num_linear_layers", "linear_num_key_heads",
            "linear_key_head_dim", "linear_num_value_heads", "linear_value_head_dim",
            "linear_conv_kernel", "linear_chunk_size", "num_ssm_layers", "ssm_num_heads",
            "ssm_head_dim", "ssm_state_size", "ssm_num_groups", "ssm_conv_kernel",
            "ssm_chunk_size", "num_mtp_layers", "mlp_act_params")
TFM_FLAGS = ("qkv_bias", "attention_out_bias", "attention_gate", "attention_sinks", "mlp_bias",
             "shared_expert_gate", "router_bias", "tie_word_embeddings", "ssm_conv_bias",
             "ssm_proj_bias", "attention_gate_proj", "lm_head_bias", "bidirectional")
TFM_VISION = ("depth", "hidden_size", "intermediate_size", "num_heads", "in_channels",
              "patch_size", "temporal_patch_size", "spatial_merge_size", "out_hidden_size",
              "window_size", "num_full_blocks", "num_deepstack_mergers",
              "num_position_embeddings")
TFM_DEFAULTS = dict(norms_per_layer=2, linear_chunk_size=64, ssm_chunk_size=256, mlp=1,
                    formula=1, lm_head=1)
# fuzz_transformer.c's hybrid_int_fields / hybrid_flag_fields, then the two kinds
TFM_HYBRID_INTS = ("ssm_intermediate_size", "ssm_dt_rank", "num_short_conv_layers",
                   "short_conv_kernel", "num_mlp_only_layers", "num_mixer_only_layers",
                   "moe_latent_size")
TFM_HYBRID_FLAGS = ("ssm_parallel", "ssm_norm", "ssm_out_proj_bias", "ssm_inner_norms",
                    "short_conv_bias", "unbiased_experts")
TFM_HYBRID_DEFAULTS = dict(ssm_norm=1)


def tfm(lengths=(), uniform=None, vision=None, grids=(), hybrid=None, **fields):
    """Raw mode (every value spelled); `uniform` = (batch, seq_len); `hybrid`
    the trailing hybrid fields (absent: not written, the defaults)."""
    f = {**TFM_DEFAULTS, **fields}

    def flag(v):  # the raw flag: (byte % 4) - 1
        return u8(v + 1)

    out = u8((2 if uniform else 0) | (4 if vision else 0))
    out += b"".join(i64(f.get(k, 0)) for k in TFM_INTS)
    out += b"".join(flag(f.get(k, 0)) for k in TFM_FLAGS)
    out += i32(f.get("attention", 0)) + i32(f["mlp"]) + i32(f.get("norm", 0))
    out += i32(f.get("qk_norm", 0))
    out += i32(f["formula"]) + i32(f.get("causal", 0)) + i32(f.get("recompute", 0))
    out += flag(f["lm_head"]) + flag(f.get("embedding", 0))
    out += i64(f.get("lora_rank", 0)) + i32(f.get("lora_targets", 0))
    if vision:
        out += i32(vision.get("kind", 1)) + b"".join(i64(vision.get(k, 0)) for k in TFM_VISION)
        out += u8(len(grids)) + b"".join(i64(x) for g in grids for x in g)
    if uniform:
        lengths = uniform
    out += u8(len(lengths)) + b"".join(i64(n) for n in lengths)
    if hybrid is not None:
        h = {**TFM_HYBRID_DEFAULTS, **hybrid}
        out += b"".join(i64(h.get(k, 0)) for k in TFM_HYBRID_INTS)
        out += b"".join(flag(h.get(k, 0)) for k in TFM_HYBRID_FLAGS)
        out += i32(h.get("linear_kind", 0)) + i32(h.get("ssm_kind", 0))
    return out


LLAMA2_7B = dict(hidden_size=4096, num_layers=32, num_heads=32, intermediate_size=11008,
                 vocab_size=32000)
LLAMA3_8B = dict(hidden_size=4096, num_layers=32, num_heads=32, num_kv_heads=8,
                 intermediate_size=14336, vocab_size=128256)
MIXTRAL = dict(hidden_size=4096, num_layers=32, num_heads=32, num_kv_heads=8, vocab_size=32000,
               num_experts=8, experts_per_token=2, moe_intermediate_size=14336)
QWEN2_MOE = dict(hidden_size=2048, num_layers=24, num_heads=16, vocab_size=151936,
                 num_experts=60, experts_per_token=4, moe_intermediate_size=1408,
                 shared_expert_intermediate_size=5632, shared_expert_gate=1, qkv_bias=1)
DEEPSEEK_V3 = dict(hidden_size=7168, num_layers=61, num_heads=128, attention=1, q_lora_rank=1536,
                   kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128,
                   intermediate_size=18432, vocab_size=129280, num_experts=256,
                   experts_per_token=8, moe_intermediate_size=2048,
                   shared_expert_intermediate_size=2048, num_dense_layers=3, num_mtp_layers=1)
GPT2 = dict(hidden_size=768, num_layers=12, num_heads=12, intermediate_size=3072,
            vocab_size=50257, mlp=0, norm=1, tie_word_embeddings=1, qkv_bias=1,
            attention_out_bias=1, mlp_bias=1, num_positions=1024)
MISTRAL = dict(hidden_size=4096, num_layers=32, num_heads=32, num_kv_heads=8,
               intermediate_size=14336, vocab_size=32000, sliding_window=4096,
               num_sliding_layers=32)
GEMMA3 = dict(hidden_size=2560, num_layers=34, num_heads=8, num_kv_heads=4, head_dim=256,
              intermediate_size=10240, vocab_size=262208, tie_word_embeddings=1,
              norms_per_layer=4, qk_norm=1, sliding_window=1024, num_sliding_layers=29)
LLAMA4 = dict(hidden_size=5120, num_layers=48, num_heads=40, num_kv_heads=8, head_dim=128,
              intermediate_size=16384, vocab_size=202048, num_experts=16, experts_per_token=1,
              moe_intermediate_size=8192, shared_expert_intermediate_size=8192,
              attention_chunk_size=8192, num_chunked_layers=36)
GPT_OSS = dict(hidden_size=2880, num_layers=36, num_heads=64, num_kv_heads=8, head_dim=64,
               vocab_size=201088, num_experts=128, experts_per_token=4,
               moe_intermediate_size=2880, qkv_bias=1, attention_out_bias=1, attention_sinks=1,
               mlp_bias=1, router_bias=1, sliding_window=128, num_sliding_layers=18)
QWEN3_NEXT = dict(hidden_size=2048, num_layers=48, num_heads=16, num_kv_heads=2, head_dim=256,
                  vocab_size=151936, qk_norm=1, attention_gate=1, num_experts=512,
                  experts_per_token=10, moe_intermediate_size=512,
                  shared_expert_intermediate_size=512, shared_expert_gate=1,
                  num_linear_layers=36, linear_num_key_heads=16, linear_key_head_dim=128,
                  linear_num_value_heads=32, linear_value_head_dim=128, linear_conv_kernel=4)
MAMBA2 = dict(hidden_size=2560, num_layers=64, vocab_size=50288, mlp=2, norms_per_layer=1,
              num_ssm_layers=64, ssm_num_heads=80, ssm_head_dim=64, ssm_state_size=128,
              ssm_num_groups=1, ssm_conv_kernel=4, ssm_conv_bias=1)
QWEN25_VL_TOWER = dict(kind=1, depth=32, hidden_size=1280, intermediate_size=3420, num_heads=16,
                       in_channels=3, patch_size=14, temporal_patch_size=2,
                       spatial_merge_size=2, out_hidden_size=3584, window_size=112,
                       num_full_blocks=4)
QWEN3_VL_TOWER = dict(kind=2, depth=27, hidden_size=1152, intermediate_size=4304, num_heads=16,
                      in_channels=3, patch_size=16, temporal_patch_size=2,
                      spatial_merge_size=2, out_hidden_size=4096, num_deepstack_mergers=3,
                      num_position_embeddings=2304)
# the dense / MoE families' structure (family_dense.c, family_moe.c)
ERNIE45_MOE = dict(hidden_size=2560, num_layers=28, num_heads=20, num_kv_heads=4, head_dim=128,
                   intermediate_size=12288, vocab_size=103424, num_experts=64,
                   experts_per_token=6, moe_intermediate_size=1536,
                   shared_expert_intermediate_size=3072, num_dense_layers=1, router_bias=1,
                   mlp_bias=1, qkv_bias=1, attention_out_bias=1, lm_head_bias=1,
                   tie_word_embeddings=1)
AFMOE = dict(hidden_size=2048, num_layers=32, num_heads=16, num_kv_heads=4, head_dim=128,
             intermediate_size=6144, vocab_size=200192, norms_per_layer=4, qk_norm=1,
             attention_gate=1, attention_gate_proj=1, num_experts=64, experts_per_token=6,
             moe_intermediate_size=1408, shared_expert_intermediate_size=2816,
             num_dense_layers=1, router_bias=1, sliding_window=1024, num_sliding_layers=24)
APERTUS = dict(hidden_size=4096, num_layers=32, num_heads=32, num_kv_heads=8,
               intermediate_size=21504, vocab_size=131072, mlp=0, qk_norm=1, mlp_act_params=2)
QWEN2_7B = dict(hidden_size=3584, num_layers=28, num_heads=28, num_kv_heads=4,
                intermediate_size=18944, vocab_size=152064, qkv_bias=1)
# The hybrids (family_mla.h, family_hybrid.h), from their published configs.
KIMI_LINEAR = dict(hidden_size=2304, num_layers=27, num_heads=32, attention=1,
                   kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128,
                   intermediate_size=9216, vocab_size=163840, num_experts=256,
                   experts_per_token=8, moe_intermediate_size=1024,
                   shared_expert_intermediate_size=1024, num_dense_layers=1,
                   num_linear_layers=20, linear_num_key_heads=32, linear_key_head_dim=128,
                   linear_num_value_heads=32, linear_value_head_dim=128, linear_conv_kernel=4)
NEMOTRON_H = dict(hidden_size=2688, num_layers=52, num_heads=32, num_kv_heads=2, head_dim=128,
                  vocab_size=131072, mlp=0, norms_per_layer=1, num_experts=128,
                  experts_per_token=6, moe_intermediate_size=1856,
                  shared_expert_intermediate_size=3712, num_ssm_layers=23, ssm_num_heads=64,
                  ssm_head_dim=64, ssm_state_size=128, ssm_num_groups=8, ssm_conv_kernel=4,
                  ssm_chunk_size=128, ssm_conv_bias=1)
NEMOTRON_H_LAYOUT = dict(num_mlp_only_layers=23, num_mixer_only_layers=29, unbiased_experts=1)
JAMBA = dict(hidden_size=4096, num_layers=32, num_heads=32, num_kv_heads=8,
             intermediate_size=14336, vocab_size=65536, num_experts=16, experts_per_token=2,
             moe_intermediate_size=14336, num_dense_layers=16, num_ssm_layers=28,
             ssm_state_size=16, ssm_conv_kernel=4, ssm_conv_bias=1)
JAMBA_MAMBA1 = dict(ssm_kind=1, ssm_intermediate_size=8192, ssm_dt_rank=256, ssm_inner_norms=1)
FALCON_H1 = dict(hidden_size=2048, num_layers=36, num_heads=8, num_kv_heads=2, head_dim=128,
                 intermediate_size=8192, vocab_size=65537, num_ssm_layers=36, ssm_num_heads=24,
                 ssm_head_dim=64, ssm_state_size=256, ssm_num_groups=1, ssm_conv_kernel=4,
                 ssm_conv_bias=1)
LFM2 = dict(hidden_size=2048, num_layers=16, num_heads=32, num_kv_heads=8,
            intermediate_size=8192, vocab_size=65536, qk_norm=1, tie_word_embeddings=1)

TRANSFORMER = [
    ("llama2_7b_palm", tfm(**LLAMA2_7B, uniform=(8, 4096))),
    ("llama2_7b_6n", tfm(**LLAMA2_7B, formula=0, uniform=(8, 4096))),
    ("llama2_7b_matmul_half", tfm(**LLAMA2_7B, formula=2, causal=1, uniform=(8, 4096))),
    ("llama3_8b_packed", tfm(**LLAMA3_8B, lengths=(100, 512, 412, 0, 3000))),
    ("llama3_8b_full_recompute", tfm(**LLAMA3_8B, recompute=1, uniform=(4, 8192))),
    ("llama3_8b_selective", tfm(**LLAMA3_8B, recompute=2, uniform=(4, 8192))),
    ("llama3_8b_lora", tfm(**LLAMA3_8B, lora_rank=16, lora_targets=0x7F, uniform=(4, 2048))),
    ("mixtral", tfm(**MIXTRAL, uniform=(2, 4096))),
    ("qwen2_moe", tfm(**QWEN2_MOE, lora_rank=8, lora_targets=0x70, lengths=(2048, 1024))),
    ("deepseek_v3_mla_mtp", tfm(**DEEPSEEK_V3, formula=2, uniform=(1, 4096))),
    ("deepseek_v3_lora_refused", tfm(**DEEPSEEK_V3, lora_rank=8, lora_targets=1, lengths=(64,))),
    ("gpt2", tfm(**GPT2, embedding=1, uniform=(8, 1024))),
    ("gpt2_nobias_norm", tfm(**{**GPT2, "norm": 2, "qkv_bias": 0, "mlp_bias": 0},
                             uniform=(8, 1024))),
    ("gpt2_lora_gate_invalid", tfm(**GPT2, lora_rank=4, lora_targets=0x10, uniform=(8, 1024))),
    ("mistral_sliding", tfm(**MISTRAL, lengths=(32768, 100, 4097))),
    ("mistral_sliding_half", tfm(**MISTRAL, causal=1, lengths=(32768, 100, 4097))),
    ("gemma3_local_global", tfm(**GEMMA3, lengths=(8192, 8192))),
    ("llama4_chunked_half", tfm(**LLAMA4, causal=1, lengths=(20000, 8192, 8193))),
    ("gpt_oss_sinks", tfm(**GPT_OSS, formula=2, uniform=(2, 4096))),
    ("qwen3_next_hybrid", tfm(**QWEN3_NEXT, formula=2, lengths=(4096, 65, 1))),
    ("mamba2_ssd", tfm(**MAMBA2, formula=2, lengths=(2048, 257, 0))),
    ("qwen2_5_vl_one_image", tfm(**QWEN2_7B, formula=2, uniform=(1, 4096),
                                 vision=QWEN25_VL_TOWER, grids=((1, 36, 52),))),
    ("qwen3_vl_video", tfm(**QWEN2_7B, qk_norm=1, uniform=(1, 8192),
                           vision=QWEN3_VL_TOWER, grids=((8, 24, 32), (1, 2, 2)))),
    ("vision_odd_grid", tfm(**QWEN2_7B, uniform=(1, 64), vision=QWEN25_VL_TOWER,
                            grids=((1, 3, 4),))),
    ("vision_bad_kind", tfm(**QWEN2_7B, uniform=(1, 64), vision={**QWEN3_VL_TOWER, "kind": 9},
                            grids=((1, 2, 2),))),
    ("no_tokens", tfm(**LLAMA2_7B, lengths=(0, 0))),
    ("kimi_linear_kda", tfm(**KIMI_LINEAR, formula=2, lengths=(4096, 65, 1),
                            hybrid=dict(linear_kind=1))),
    ("kimi_linear_kda_unequal_heads", tfm(**{**KIMI_LINEAR, "linear_num_value_heads": 64},
                                          uniform=(1, 64), hybrid=dict(linear_kind=1))),
    ("nemotron_h_blocks_latent", tfm(**NEMOTRON_H, formula=2, uniform=(2, 8192),
                                     hybrid=dict(NEMOTRON_H_LAYOUT, moe_latent_size=1024))),
    ("nemotron_h_too_many_mixer_only", tfm(**NEMOTRON_H, uniform=(1, 64),
                                           hybrid=dict(NEMOTRON_H_LAYOUT,
                                                       num_mixer_only_layers=30))),
    ("jamba_mamba1", tfm(**JAMBA, formula=2, lengths=(262144, 3), hybrid=JAMBA_MAMBA1)),
    ("jamba_mamba1_no_rank", tfm(**JAMBA, uniform=(1, 64),
                                 hybrid=dict(JAMBA_MAMBA1, ssm_dt_rank=0))),
    ("falcon_h1_parallel", tfm(**FALCON_H1, formula=2, uniform=(4, 16384),
                               hybrid=dict(ssm_parallel=1, ssm_norm=0))),
    ("lfm2_short_conv", tfm(**LFM2, formula=2, lengths=(32768, 5, 0),
                            hybrid=dict(num_short_conv_layers=10, short_conv_kernel=3,
                                        short_conv_bias=1))),
    ("lfm2_short_conv_lora_refused", tfm(**LFM2, lora_rank=8, lora_targets=1, uniform=(1, 64),
                                         hybrid=dict(num_short_conv_layers=10,
                                                     short_conv_kernel=3))),
    ("hybrid_bad_kinds", tfm(**LLAMA3_8B, uniform=(1, 64), hybrid=dict(ssm_kind=7,
                                                                        linear_kind=-1))),
    ("negative_length", tfm(**LLAMA2_7B, lengths=(10, -1))),
    ("length_int64_max", tfm(**LLAMA2_7B, lengths=(I64_MAX, I64_MAX))),
    ("uniform_huge", tfm(**LLAMA2_7B, uniform=(I64_MAX, I64_MAX))),
    ("dims_int64_max", tfm(hidden_size=I64_MAX, num_layers=I64_MAX, num_heads=I64_MAX,
                           head_dim=I64_MAX, intermediate_size=I64_MAX, vocab_size=I64_MAX,
                           num_positions=I64_MAX, lengths=(I64_MAX,) * 64)),
    ("moe_int64_max", tfm(hidden_size=I64_MAX, num_layers=I64_MAX, num_heads=1,
                          head_dim=I64_MAX, intermediate_size=I64_MAX, vocab_size=I64_MAX,
                          num_experts=I64_MAX, experts_per_token=I64_MAX,
                          moe_intermediate_size=I64_MAX,
                          shared_expert_intermediate_size=I64_MAX, shared_expert_gate=1,
                          num_dense_layers=1, lora_rank=I64_MAX, lora_targets=0x7F,
                          recompute=1, embedding=1, uniform=(I64_MAX, I64_MAX))),
    ("scan_int64_max", tfm(**{**QWEN3_NEXT, "linear_chunk_size": I64_MAX,
                              "linear_key_head_dim": I64_MAX}, lengths=(I64_MAX,))),
    # a regression: chunk counts of a length near 2^63 by a window of 1
    # were taken from a rounded double (UB converting 2^63 back to int64)
    ("chunked_len_int64_max_w1", tfm(**LLAMA2_7B, sliding_window=1, lengths=(I64_MAX, 3))),
    ("heads_nodiv", tfm(hidden_size=100, num_layers=2, num_heads=3, intermediate_size=10,
                        vocab_size=8, lengths=(5,))),
    ("kv_gt_heads", tfm(hidden_size=64, num_layers=2, num_heads=4, num_kv_heads=8,
                        intermediate_size=10, vocab_size=8, lengths=(5,))),
    ("kv_int64_min", tfm(hidden_size=64, num_layers=2, num_heads=4, num_kv_heads=I64_MIN,
                         intermediate_size=10, vocab_size=8, lengths=(5,))),
    ("bad_enums", tfm(**LLAMA2_7B, mlp=7, norm=-1, formula=9, causal=-3, recompute=I32_MAX,
                      lengths=(5,))),
    ("bad_flags", tfm(**LLAMA2_7B, tie_word_embeddings=2, qkv_bias=-1, lengths=(5,))),
    ("lora_targets_no_rank", tfm(**LLAMA2_7B, lora_targets=1, lengths=(5,))),
    ("lora_targets_high_bits", tfm(**LLAMA2_7B, lora_rank=8, lora_targets=-1, lengths=(5,))),
    ("sliding_without_window", tfm(**LLAMA2_7B, num_sliding_layers=3, lengths=(5,))),
    ("mixers_overfull", tfm(**{**QWEN3_NEXT, "num_ssm_layers": 20}, lengths=(5,))),
    ("experts_without_k", tfm(**{**MIXTRAL, "experts_per_token": 0}, uniform=(1, 128))),
    ("dense_fields_with_no_experts", tfm(**LLAMA2_7B, moe_intermediate_size=5, lengths=(5,))),
    ("all_zero", tfm(hidden_size=0, num_layers=0, num_heads=0, vocab_size=0, lengths=())),
    ("ernie45_moe_biases", tfm(**ERNIE45_MOE, lengths=(4096, 100),
                               hybrid=dict(unbiased_experts=1))),
    ("afmoe_gate_proj_sliding", tfm(**AFMOE, formula=2, causal=1, uniform=(2, 4096))),
    ("afmoe_lora_refused", tfm(**AFMOE, lora_rank=8, lora_targets=1, lengths=(64,))),
    ("gate_proj_without_gate", tfm(**{**AFMOE, "attention_gate": 0}, lengths=(64,))),
    ("apertus_xielu", tfm(**APERTUS, recompute=1, uniform=(4, 4096))),
    ("gemma_bidirectional_half", tfm(**LLAMA2_7B, bidirectional=1, causal=1, uniform=(2, 512))),
    ("bidirectional_window", tfm(**MISTRAL, bidirectional=1, lengths=(8192,))),
    ("act_params_int64_max", tfm(**{**APERTUS, "mlp_act_params": I64_MAX}, lengths=(I64_MAX,))),
]

# ---- fuzz_driver: mode, api, code, path ---------------------------------------

def drv(mode, path, api=0, code=0):
    if isinstance(path, str):
        path = path.encode()
    return u8(mode) + u8(api) + i32(code) + path


DRIVER = [
    ("env_missing_abs", drv(0, "/nonexistent/libcuda.so.1")),
    ("env_missing_hip", drv(0, "/nonexistent/libamdhip64.so", api=200)),
    ("env_bare_name", drv(0, "libcuda_does_not_exist.so.1")),
    ("env_empty_default", drv(0, "")),
    ("env_directory", drv(0, "/tmp")),
    ("env_text_file", drv(0, "/etc/hostname")),
    ("env_relative", drv(0, "./no/such/lib.so")),
    ("env_dollar_origin", drv(0, "$ORIGIN/../lib/libcuda.so")),
    ("env_newline", drv(0, "/opt/cuda\n/lib64/libcuda.so")),
    ("env_long_path", drv(0, "/" + "x" * 300 + "/libcuda.so")),
    ("env_very_long", drv(0, "/" + "y/" * 2100)),
    ("env_high_bytes", drv(0, bytes(range(128, 256)))),
    ("env_embedded_nul", drv(0, b"/nonexistent\x00/lib")),
    ("path_missing", drv(1, "/nonexistent/libcuda.so.1")),
    ("path_directory", drv(1, "/")),
    ("path_invalid_api", drv(1, "/nonexistent/x.so", api=252)),
    ("path_api_minus2", drv(1, "/nonexistent/x.so", api=250)),
    ("fake_suffix", drv(2, ".bak")),
    ("fake_as_dir", drv(2, "/libcuda.so")),
    ("fake_cuda", drv(3, "", api=0, code=999)),
    ("fake_hip", drv(3, "", api=200, code=600)),
    ("fake_cuinit_fails", drv(7, "", api=0, code=100)),
    ("fake_cuinit_fails_neg", drv(7, "", api=0, code=I32_MIN)),
    ("fake_invalid_api", drv(3, "", api=255)),
]


# ---- fuzz_stats: capacity, warm-up, ops ---------------------------------------

def dbl(v):
    return u8(0) + struct.pack("<d", v)


NAN = float("nan")
INF = float("inf")


def push(step_s, model, executed=NAN, pbytes=NAN, tokens=NAN, peak=None):
    out = u8(0) + dbl(step_s) + dbl(model) + dbl(executed) + dbl(pbytes) + dbl(tokens)
    if peak is not None:  # the per-block metrics' peak (read after a valid push)
        out += dbl(peak[0]) + dbl(peak[1]) + i32(peak[2])
    return out


def summarize(flops, bw, devices):
    return u8(2) + dbl(flops) + dbl(bw) + i32(devices)


H100 = (989.4e12, 3.35e12, 8)
STATS = [
    ("steady", u8(4) + u8(1) + b"".join(
        push(0.5, 6e15, 8e15, 14e9, 32768, H100) for _ in range(6)) + summarize(*H100)),
    ("warmup_only", u8(8) + u8(5) + push(1.0, 1e12, peak=H100) + summarize(*H100)),
    ("unknown_optionals", u8(3) + u8(0) + push(0.2, 1e12, peak=(NAN, NAN, 1))
     + summarize(NAN, NAN, 1)),
    ("zero_step", u8(2) + u8(0) + push(0.0, 1e12, peak=H100) + summarize(*H100)),
    ("bad_step", u8(2) + u8(0) + push(-1.0, 1e12) + push(NAN, 1e12) + push(INF, 1e12)
     + summarize(*H100)),
    ("bad_work", u8(2) + u8(0) + push(1.0, -1.0) + push(1.0, INF) + push(1.0, 1.0, -5.0)
     + push(1.0, 1.0, NAN, -0.5) + push(1.0, 1.0, NAN, NAN, INF) + summarize(*H100)),
    ("bad_peak", u8(2) + u8(0) + push(1.0, 1.0, peak=H100) + summarize(0.0, 1.0, 1)
     + summarize(-1.0, 1.0, 1) + summarize(INF, 1.0, 1) + summarize(1.0, 1.0, 0)
     + summarize(1.0, 1.0, I32_MIN)),
    ("huge_values", u8(3) + u8(0) + push(1e-300, 1.7e308, 1.7e308, 1.7e308, 1.7e308,
                                        (4.9e-324, 4.9e-324, I32_MAX))
     + push(1e-300, 1.7e308) + summarize(4.9e-324, 4.9e-324, I32_MAX)),
    ("wraparound_clear", u8(2) + u8(0) + b"".join(push(float(i), 1.0) for i in range(5))
     + summarize(*H100) + u8(3) + summarize(*H100) + push(1.0, 2.0) + summarize(*H100)),
    ("capacity_zero", u8(0) + u8(0)),
    ("capacity_2_24", u8(204) + u8(0)),
    ("capacity_over", u8(205) + u8(0)),
    ("capacity_u32_max", u8(206) + u8(0)),
]


# ---- fuzz_steps: config, then ops ----------------------------------------------

CUDA, HIP, CPU = 1, 2, 0
NO_CONTEXT = 4
TOKENS, MODEL, EXECUTED = 1, 2, 4
# size selectors (fuzz_steps.c pick_size): index % 13 into
# [0, 0, 0, 0, 1, 2, 3, 4, 5, 8, 16, 64, 2^24 + 1]
SIZE = {0: 0, 1: 4, 2: 5, 3: 6, 4: 7, 5: 8, 8: 9, 16: 10, 64: 11, "over": 12}
# window selectors: < 200 -> sel % 12; 200.. -> [0, 2^24 + 1, 2^32 - 1, 4096, 100]
WINDOW = {"over": 201, "u32_max": 202, 4096: 203, 100: 204}
# warm-up selectors: < 240 -> sel % 6; 240.. -> [10^12, 10^12 + 1, 2^64 - 1]
WARMUP_MAX, WARMUP_OVER = 240, 241


def steps_config(mode=CUDA, window=4, warmup=1, sizes=(0, 0, 0), model=5e11,
                 executed=6e11, pbytes=1e9, tokens=NAN, peak=(1e15, 2e12, 8), stream=0):
    w = WINDOW.get(window, window)
    out = u8(mode) + u8(w) + u8(warmup) + b"".join(u8(SIZE[z]) for z in sizes)
    out += dbl(model) + dbl(executed) + dbl(pbytes) + dbl(tokens)
    out += dbl(peak[0]) + dbl(peak[1]) + i32(peak[2]) + u8(stream)
    return out


def step(tokens=None, model=None, executed=None):
    given = ((TOKENS if tokens is not None else 0) | (MODEL if model is not None else 0)
             | (EXECUTED if executed is not None else 0))
    return (u8(0) + u8(given) + dbl(0.0 if tokens is None else tokens)
            + dbl(0.0 if model is None else model) + dbl(0.0 if executed is None else executed))


def advance_ms(ms):  # units of 10 us
    return u8(3) + struct.pack("<H", int(ms * 100))


def gpu(work_ms, lag_ms):
    return u8(4) + u8(work_ms) + u8(lag_ms)


SUMMARY, FLUSH = u8(5), u8(6)
CLOSE = u8(7) + u8(0x80)


def fail(index):  # 0 record, 1 query, 2 elapsed, 3 synchronize, 4 create
    return u8(7) + u8(index)


BOOK_FIELDS = ("tokens", "model", "executed", "ideal", "overcompute", "language")


def book(back=0, **values):  # the step `back` before the newest closed one (255: far past)
    given = sum(1 << i for i, name in enumerate(BOOK_FIELDS) if name in values)
    return (u8(7) + u8(0x40) + u8(back) + u8(given)
            + b"".join(dbl(values.get(name, 0.0)) for name in BOOK_FIELDS))


# phase ops (fuzz_steps.c): an op byte >= 200, (byte - 200) % 6
def phase_begin(phase):
    return u8(200) + u8(phase)


def phase_switch(phase):
    return u8(202) + u8(phase)


PHASE_END, EXCLUDE_BEGIN, EXCLUDE_END, PHASE_SUMMARY = u8(201), u8(203), u8(204), u8(205)


def loop(n, tokens=4096, ms=1):
    return b"".join(step(tokens) + advance_ms(ms) for _ in range(n))


STEPS = [
    ("cuda_steady", steps_config() + gpu(1, 0) + loop(20) + SUMMARY + FLUSH + SUMMARY),
    ("hip_steady", steps_config(mode=HIP) + gpu(1, 0) + loop(20) + SUMMARY + FLUSH),
    ("cpu_steady", steps_config(mode=CPU) + loop(12) + SUMMARY + FLUSH + SUMMARY),
    ("cuda_gpu_behind_lag", steps_config(window=100, warmup=0) + gpu(2, 5) + loop(30)
     + SUMMARY + FLUSH + SUMMARY),
    ("cuda_pool_full", steps_config(sizes=(2, 4, 4), window=8) + gpu(3, 0) + loop(40)
     + SUMMARY + FLUSH + SUMMARY),
    ("cuda_smallest_pool", steps_config(sizes=(2, 2, 2)) + gpu(2, 1) + loop(30) + SUMMARY),
    # a pool-full wait whose mark completes at once (test_steps.c regression)
    ("cuda_pool_full_wait_resolves_at_once", steps_config(sizes=(2, 2, 2), warmup=0)
     + gpu(2, 1) + step(1) + step(1) + gpu(0, 0) + step(1) + SUMMARY),
    ("cuda_read_early", steps_config(warmup=0) + gpu(0, 5) + step(1) + step(1) + step(1)
     + SUMMARY + FLUSH + SUMMARY),
    ("cuda_zero_periods", steps_config(warmup=0) + gpu(0, 0) + step(1) * 6 + SUMMARY),
    ("cuda_fail_record", steps_config() + gpu(1, 0) + loop(6) + fail(0) + loop(6) + SUMMARY),
    ("cuda_fail_query", steps_config() + gpu(1, 0) + loop(6) + fail(1) + loop(6) + SUMMARY),
    ("cuda_fail_elapsed", steps_config() + gpu(1, 0) + loop(6) + fail(2) + loop(6) + SUMMARY),
    ("cuda_fail_flush", steps_config() + gpu(1, 9) + loop(6) + fail(3) + FLUSH + loop(4)
     + SUMMARY),
    ("cuda_fail_grow", steps_config(sizes=(2, 16, 16)) + gpu(5, 0) + fail(4) + loop(10)
     + SUMMARY),
    ("hip_fail_record", steps_config(mode=HIP) + gpu(1, 0) + loop(4) + fail(0) + loop(4)
     + SUMMARY),
    ("cuda_no_context", steps_config(mode=CUDA | NO_CONTEXT) + loop(5) + SUMMARY),
    ("hip_no_context_needs_none", steps_config(mode=HIP | NO_CONTEXT) + gpu(1, 0) + loop(5)
     + SUMMARY),
    ("close_then_step", steps_config() + gpu(1, 0) + loop(4) + CLOSE + loop(2) + SUMMARY
     + FLUSH + CLOSE),
    ("bad_values", steps_config(warmup=0) + gpu(1, 0) + step(1)
     + step(tokens=-1.0) + advance_ms(1) + step(model=NAN) + advance_ms(1)
     + step(executed=INF) + advance_ms(1) + step(-INF, -0.5, NAN) + advance_ms(1)
     + step(0.0, 0.0, 0.0) + advance_ms(1) + SUMMARY + FLUSH + SUMMARY),
    # booking work onto closed steps (steps.h "Booking"): pending, pushed, open, past
    ("cuda_book", steps_config(model=NAN, executed=NAN, window=4, warmup=0) + gpu(1, 3)
     + loop(6) + book(0, model=1e12, tokens=10) + book(3, model=2e12, executed=3e12, ideal=1e-3)
     + book(255, model=1.0) + book(200, model=1.0) + FLUSH + SUMMARY
     + book(1, model=-1.0, overcompute=INF, language=NAN) + SUMMARY),
    ("cpu_book_evicted", steps_config(mode=CPU, model=NAN, window=1, warmup=0)
     + loop(40, ms=0) + book(5, model=1e9, language=4e8, overcompute=1e8) + book(30, model=1e9)
     + SUMMARY),
    ("per_step_override", steps_config(window=2, warmup=0) + gpu(2, 0) + step()
     + step(10, 1e12) + advance_ms(2) + step(10, 1e12, 3e12) + advance_ms(2) + step(10)
     + advance_ms(2) + SUMMARY + FLUSH + SUMMARY),
    ("unknown_default_model", steps_config(model=NAN, executed=NAN, pbytes=NAN) + loop(5)
     + SUMMARY),
    ("peaks_unknown", steps_config(peak=(NAN, NAN, 1)) + loop(4) + SUMMARY),
    ("window_4096_warmup_max", steps_config(window=4096, warmup=WARMUP_MAX) + loop(3)
     + SUMMARY),
    ("devices_max", steps_config(peak=(1e15, 2e12, 10**9)) + loop(3) + SUMMARY),
    # phases and exclusions
    ("cuda_phases_loop", steps_config(window=8, warmup=0) + gpu(1, 0)
     + b"".join(step(1) + phase_switch(0) + advance_ms(1) + phase_switch(1) + phase_switch(2)
                + phase_switch(3) + PHASE_END + advance_ms(1) for _ in range(12))
     + PHASE_SUMMARY + FLUSH + PHASE_SUMMARY),
    ("cuda_phases_nested_open_at_step", steps_config(warmup=0) + gpu(2, 1) + step(1)
     + phase_begin(0) + phase_begin(1) + advance_ms(3) + PHASE_END + phase_begin(2) + step(1)
     + advance_ms(9) + PHASE_SUMMARY),
    ("cuda_exclusion", steps_config(warmup=0) + gpu(2, 0) + step(1) + phase_begin(1)
     + EXCLUDE_BEGIN + advance_ms(10) + EXCLUDE_END + PHASE_END + step(1) + EXCLUDE_BEGIN
     + step(1) + advance_ms(20) + PHASE_SUMMARY + SUMMARY),
    ("cuda_phases_pool_full", steps_config(sizes=(2, 4, 4), window=8, warmup=0) + gpu(3, 0)
     + b"".join(step(1) + phase_switch(0) + phase_switch(2) + PHASE_END for _ in range(20))
     + PHASE_SUMMARY + FLUSH + PHASE_SUMMARY),
    ("phase_misuse", steps_config(mode=CPU, warmup=0) + PHASE_END + phase_begin(15)
     + phase_switch(16) + b"".join(phase_begin(0) for _ in range(17)) + step(1)
     + PHASE_END + step(1) + PHASE_SUMMARY),
    ("cuda_phases_fail_record", steps_config(warmup=0) + gpu(1, 0) + step(1) + phase_begin(0)
     + fail(0) + phase_switch(1) + PHASE_END + step(1) + phase_begin(2) + step(1)
     + PHASE_SUMMARY),
    ("cuda_phases_then_close", steps_config(warmup=0) + gpu(1, 0) + step(1) + phase_begin(0)
     + CLOSE + PHASE_END + EXCLUDE_BEGIN + PHASE_SUMMARY),
    # badput phases (12 checkpoint, 13 eval, 14 compile) leave the periods
    ("cuda_badput_phases", steps_config(warmup=0) + gpu(1, 0) + step(1) + phase_begin(14)
     + advance_ms(20) + PHASE_END + step(1) + phase_begin(12) + advance_ms(30) + EXCLUDE_BEGIN
     + advance_ms(2) + EXCLUDE_END + PHASE_END + step(1) + phase_switch(13) + advance_ms(10)
     + PHASE_SUMMARY + FLUSH + SUMMARY),
    # a clock failure inside an exclusion inside a badput phase (found by fuzzing)
    ("cuda_badput_fail_inside", steps_config(warmup=0) + gpu(1, 0) + advance_ms(50) + step(1)
     + phase_begin(12) + EXCLUDE_BEGIN + advance_ms(1) + fail(0) + EXCLUDE_END + step(1)
     + step(1) + SUMMARY),
    # refused configurations, one field each
    ("bad_clock", steps_config(mode=3 | 0x50)),
    ("bad_window_zero", steps_config(window=0)),
    ("bad_window_over", steps_config(window="over")),
    ("bad_window_u32_max", steps_config(window="u32_max")),
    ("bad_warmup_over", steps_config(warmup=WARMUP_OVER)),
    ("bad_model", steps_config(model=-1.0)),
    ("bad_executed", steps_config(executed=INF)),
    ("bad_bytes", steps_config(pbytes=-0.5)),
    ("bad_peak_zero", steps_config(peak=(0.0, 2e12, 1))),
    ("bad_peak_bytes_inf", steps_config(peak=(1e15, INF, 1))),
    ("bad_devices_zero", steps_config(peak=(1e15, 2e12, 0))),
    ("bad_devices_over", steps_config(peak=(1e15, 2e12, 10**9 + 1))),
    ("bad_devices_min", steps_config(peak=(1e15, 2e12, I32_MIN))),
    ("bad_sizes_initial_one", steps_config(sizes=(1, 0, 0))),
    ("bad_sizes_order", steps_config(sizes=(8, 4, 0))),
    ("bad_sizes_history_short", steps_config(sizes=(2, 64, 16))),
    ("bad_sizes_history_over", steps_config(sizes=(0, 0, "over"))),
]



# ---- fuzz_mixed: (FLOPs, peak) per dtype, in dtype order ----------------------
# fp64, fp32, tf32, fp16, bf16, fp8, int8, int4, fp4 (core/base/dtypes.h)

def mixed(**pairs):
    order = ["fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8", "int4", "fp4"]
    out = b""
    for name in order:
        f, p = pairs.get(name, (0.0, NAN))
        out += dbl(f) + dbl(p)
    return out


MIXED = [
    ("h100_fp8_bf16", mixed(fp8=(4194304.0, 1978.9e12), bf16=(4194304.0, 989.4e12))),
    ("one_dtype", mixed(bf16=(6e15, 989.4e12))),
    ("nothing", mixed()),
    ("no_peak", mixed(bf16=(1e12, 989.4e12), fp64=(1.0, NAN))),
    ("zero_flops_no_peak", mixed(fp8=(0.0, NAN), bf16=(1e12, 989.4e12))),
    ("negative", mixed(bf16=(-1.0, 989.4e12))),
    ("infinite", mixed(fp16=(INF, 989.4e12))),
    ("nan_flops", mixed(tf32=(NAN, 494.7e12))),
    ("zero_peak", mixed(bf16=(1.0, 0.0))),
    ("overflow", mixed(bf16=(1.7e308, 4.9e-324))),
    ("all_dtypes", mixed(fp64=(1.0, 1.0), fp32=(2.0, 2.0), tf32=(3.0, 3.0), fp16=(4.0, 4.0),
                         bf16=(5.0, 5.0), fp8=(6.0, 6.0), int8=(7.0, 7.0), int4=(8.0, 8.0),
                         fp4=(9.0, 9.0))),
]


# ---- fuzz_comm: mode u8, then per mode (tests/c/fuzz/fuzz_comm.c) ----------

def comm_engine(window, warmup, *ops):
    return u8(4) + u8(window) + u8(warmup) + b"".join(ops)


def c_launch(kind, nbytes=4096.0, bus=2048.0, link=50e9, host=False):
    return u8(2 | (8 if host else 0)) + u8(kind) + dbl(nbytes) + dbl(bus) + dbl(link)


COMM = [
    ("rate_ndr", u8(0) + b"400 Gb/sec (4X NDR)\n"),
    ("rate_hdr_blanks", u8(0) + b"  200 Gb/sec (4X HDR)"),
    ("rate_fdr_no_row", u8(0) + b"56 Gb/sec (4X FDR)"),
    ("rate_roce_100", u8(0) + b"100 Gb/sec (4X EDR)"),
    ("rate_fraction", u8(0) + b"2.5 Gb/sec (1X SDR)"),
    ("rate_bad_unit", u8(0) + b"400 MB/sec"),
    ("rate_empty", u8(0)),
    ("rate_two_dots", u8(0) + b"1.2.3 Gb/sec"),
    ("rate_long_number", u8(0) + b"9" * 80 + b" Gb/sec"),
    ("intra_h100_sxm", u8(1) + u8(0) + dbl(400.0) + b"H100 SXM"),
    ("intra_mi300x_roce", u8(1) + u8(1) + dbl(400.0) + b"MI300X"),
    ("intra_unknown_layer", u8(1) + u8(2) + dbl(100.0) + b"Omni-Path"),
    ("inter_nan_rate", u8(1) + u8(0) + dbl(NAN) + b"A10G"),
    ("kind_all_gather", u8(2) + b"all_gather"),
    ("kind_op_type", u8(2) + b"_REDUCE_SCATTER_BASE"),
    ("kind_op_name", u8(2) + b"c10d::allreduce_"),
    ("kind_unknown", u8(2) + b"UNKNOWN"),
    ("ratios_all_reduce_8", u8(3) + i32(2) + i64(8) + dbl(1e9) + dbl(0.5) + dbl(0.0)),
    ("ratios_other", u8(3) + i32(6) + i64(4) + dbl(1.0) + dbl(1.0) + dbl(1.0)),
    ("ratios_bad", u8(3) + i32(-1) + i64(0) + dbl(NAN) + dbl(-1.0) + dbl(INF)),
    ("engine_one_step", comm_engine(4, 0, u8(0), u8(1), c_launch(2), u8(4), u8(1))),
    ("engine_deferred_end", comm_engine(4, 1, u8(0), u8(1), c_launch(0), u8(5), u8(1), u8(1))),
    ("engine_excluded", comm_engine(2, 0, u8(0), u8(1), u8(7 | 16), c_launch(1), u8(4), u8(7),
                                    u8(1))),
    ("engine_bad_launch", comm_engine(2, 0, u8(0), u8(1), c_launch(7), c_launch(0, -1.0),
                                      c_launch(0, 1.0, NAN, INF), u8(1))),
    ("engine_phases", comm_engine(3, 0, u8(0), u8(1), u8(6 | 16), u8(5), c_launch(5), u8(6),
                                  u8(4), u8(1))),
    ("engine_end_before_begin", comm_engine(2, 0, u8(0), u8(1), c_launch(3), u8(5 | 16) + u64(0),
                                            u8(1))),
]


def main():
    write("fuzz_lookup", LOOKUP)
    write("fuzz_normalize", NORMALIZE)
    write("fuzz_override", OVERRIDE)
    write("fuzz_flops", FLOPS)
    write("fuzz_ops", OPS)
    write("fuzz_transformer", TRANSFORMER)
    write("fuzz_driver", DRIVER)
    write("fuzz_stats", STATS)
    write("fuzz_steps", STEPS)
    write("fuzz_mixed", MIXED)
    write("fuzz_comm", COMM)
    total = sum(len(x) for x in (LOOKUP, NORMALIZE, OVERRIDE, FLOPS, OPS, TRANSFORMER, DRIVER,
                                 STATS, STEPS, MIXED, COMM))
    print(f"wrote {total} corpus files under {os.path.relpath(CORPUS)}")


if __name__ == "__main__":
    main()
