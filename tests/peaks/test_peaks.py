"""mfu_tracker.gpu: the datasheet table, lookup from real device strings,
the MFU_TRACKER_PEAK_TFLOPS override, user and measured peaks."""
import math
import warnings

import pytest
import torch

import mfu_tracker
from mfu_tracker import _C, gpu
from mfu_tracker.gpu import (
    GPUSpec,
    get_gpu_spec,
    gpu_spec_table,
    lookup_gpu_spec,
    measure_peak_flops,
    measured_gpu_spec,
    user_gpu_spec,
)
from mfu_tracker.peaks import _table as gpu_table

from _bracket import Bracket

GIB = 2**30


@pytest.fixture(autouse=True)
def _fresh_warnings(monkeypatch):
    """Each test sees the warn-once registry empty and no env override."""
    monkeypatch.setattr(gpu_table, "_warned", set())
    monkeypatch.delenv("MFU_TRACKER_PEAK_TFLOPS", raising=False)


# (device string as torch.cuda.get_device_name() prints it, cc, SMs, total_memory,
#  expected row, dtype, expected dense TFLOP/s)
REAL_DEVICES = [
    # H100 SXM datasheet: 1,979 TFLOPS bf16 with sparsity; whitepaper 1978.9 / 2 = 989.4
    ("NVIDIA H100 80GB HBM3", (9, 0), 132, 79.6 * GIB, "H100 SXM", "bf16", 989.4),
    # H100 SXM datasheet: 3,958 fp8 with sparsity; whitepaper 3957.8 / 2 = 1978.9
    ("NVIDIA H100 80GB HBM3", (9, 0), 132, 79.6 * GIB, "H100 SXM", "fp8", 1978.9),
    # H100 PCIe datasheet: 1,513 bf16 with sparsity / 2 = 756.5
    ("NVIDIA H100 PCIe", (9, 0), 114, 79.6 * GIB, "H100 PCIe", "bf16", 756.5),
    # H100 NVL datasheet: 1,671 bf16 with sparsity / 2 = 835.5
    ("NVIDIA H100 NVL", (9, 0), 132, 93.6 * GIB, "H100 NVL", "bf16", 835.5),
    # A100 datasheet: 312 bf16 dense (624 sparse), 156 tf32, 19.5 fp64 tensor
    ("NVIDIA A100-SXM4-80GB", (8, 0), 108, 79.2 * GIB, "A100 SXM4 80GB", "bf16", 312.0),
    ("NVIDIA A100-SXM4-40GB", (8, 0), 108, 39.6 * GIB, "A100 SXM4 40GB", "tf32", 156.0),
    ("NVIDIA A100-PCIE-40GB", (8, 0), 108, 39.6 * GIB, "A100 PCIe 40GB", "fp64", 19.5),
    ("NVIDIA A100 80GB PCIe", (8, 0), 108, 79.2 * GIB, "A100 PCIe 80GB", "fp16", 312.0),
    # A800 datasheet: the A100's peaks
    ("NVIDIA A800-SXM4-80GB", (8, 0), 108, 79.2 * GIB, "A800 SXM4 80GB", "bf16", 312.0),
    # V100 datasheet: SXM2 125 tensor, PCIe 112 tensor; 15.7 / 14 fp32
    ("Tesla V100-SXM2-16GB", (7, 0), 80, 15.8 * GIB, "V100 SXM2 16GB", "fp16", 125.0),
    ("Tesla V100-SXM2-32GB", (7, 0), 80, 31.7 * GIB, "V100 SXM2 32GB", "fp32", 15.7),
    ("Tesla V100-PCIE-32GB", (7, 0), 80, 31.7 * GIB, "V100 PCIe 32GB", "fp16", 112.0),
    # T4 datasheet: 65 mixed-precision fp16, 130 int8 TOPS
    ("Tesla T4", (7, 5), 40, 14.7 * GIB, "T4", "fp16", 65.0),
    ("Tesla T4", (7, 5), 40, 14.7 * GIB, "T4", "int8", 130.0),
    # A10 datasheet: 125 bf16 dense (250 sparse)
    ("NVIDIA A10", (8, 6), 72, 22.1 * GIB, "A10", "bf16", 125.0),
    # A40 datasheet: 149.7 bf16 dense (299.4 sparse)
    ("NVIDIA A40", (8, 6), 84, 44.4 * GIB, "A40", "bf16", 149.7),
    # RTX A6000 datasheet: 309.7 tensor with sparsity / 2 = 154.8
    ("NVIDIA RTX A6000", (8, 6), 84, 47.5 * GIB, "RTX A6000", "fp16", 154.8),
    # L4 datasheet: 242 bf16 with sparsity / 2 = 121; 485 fp8 / 2 = 242.5
    ("NVIDIA L4", (8, 9), 58, 22.0 * GIB, "L4", "bf16", 121.0),
    ("NVIDIA L4", (8, 9), 58, 22.0 * GIB, "L4", "fp8", 242.5),
    # L40 datasheet: 181 bf16 dense (362 sparse)
    ("NVIDIA L40", (8, 9), 142, 44.4 * GIB, "L40", "bf16", 181.0),
    # L40S datasheet: 362.05 bf16 dense (733 sparse), 733 fp8 dense
    ("NVIDIA L40S", (8, 9), 142, 44.4 * GIB, "L40S", "bf16", 362.05),
    ("NVIDIA L40S", (8, 9), 142, 44.4 * GIB, "L40S", "fp8", 733.0),
    # GA102 whitepaper: RTX 3090 fp16 with FP32 accumulate 71 (142 sparse)
    ("NVIDIA GeForce RTX 3090", (8, 6), 82, 23.7 * GIB, "GeForce RTX 3090", "fp16", 71.0),
    # Ada whitepaper: RTX 4090 fp16/FP32-acc 165.2, RTX 4080 97.5
    ("NVIDIA GeForce RTX 4090", (8, 9), 128, 23.6 * GIB, "GeForce RTX 4090", "bf16", 165.2),
    ("NVIDIA GeForce RTX 4080", (8, 9), 76, 15.6 * GIB, "GeForce RTX 4080", "fp16", 97.5),
    # RTX Blackwell whitepaper: RTX 5090 fp16/FP32-acc 209.5 (838 fp16-acc sparse / 4)
    ("NVIDIA GeForce RTX 5090", (12, 0), 170, 31.4 * GIB, "GeForce RTX 5090", "bf16", 209.5),
    # H800 datasheet: 1,979 bf16 with sparsity (same GH100 SXM as H100) -> 989.4; fp64 1
    ("NVIDIA H800", (9, 0), 132, 79.6 * GIB, "H800 SXM", "bf16", 989.4),
    ("NVIDIA H800", (9, 0), 132, 79.6 * GIB, "H800 SXM", "fp64", 1.0),
    # H20: 148 bf16 dense, 296 fp8
    ("NVIDIA H20", (9, 0), 78, 95.0 * GIB, "H20", "bf16", 148.0),
    # H200 datasheet: 1,979 bf16 with sparsity -> 989.4; NVL 1,671 / 2 = 835.5
    ("NVIDIA H200", (9, 0), 132, 139.8 * GIB, "H200 SXM", "bf16", 989.4),
    ("NVIDIA H200 NVL", (9, 0), 132, 139.8 * GIB, "H200 NVL", "bf16", 835.5),
    # GH200 datasheet: 990 bf16 dense (1,979 sparse): the H100 SXM GPU -> 989.4
    ("NVIDIA GH200 480GB", (9, 0), 132, 95.0 * GIB, "GH200 96GB", "bf16", 989.4),
    ("NVIDIA GH200 144G HBM3e", (9, 0), 132, 142.5 * GIB, "GH200 144GB", "bf16", 989.4),
    # HGX B200: 36 PF bf16 sparse / 8 GPUs / 2 = 2250; fp4 144 PF / 8 / 2 = 9000
    ("NVIDIA B200", (10, 0), 148, 178.4 * GIB, "B200", "bf16", 2250.0),
    ("NVIDIA B200", (10, 0), 148, 178.4 * GIB, "B200", "fp4", 9000.0),
    # GB200 NVL72: 360 PF bf16 sparse / 72 / 2 = 2500
    ("NVIDIA GB200", (10, 0), None, 184.0 * GIB, "GB200", "bf16", 2500.0),
    # GB300 NVL72: 1,080 PF fp4 dense / 72 = 15000
    ("NVIDIA GB300", (10, 3), None, 275.0 * GIB, "GB300", "fp4", 15000.0),
    # HGX B300: 72 PF fp8 sparse / 8 / 2 = 4500
    ("NVIDIA B300 SXM6 AC", (10, 3), None, 268.0 * GIB, "B300", "fp8", 4500.0),
    # MI300X datasheet: 1307.4 bf16 dense, 2614.9 fp8
    ("AMD Instinct MI300X", None, 304, 192.0 * GIB, "MI300X", "bf16", 1307.4),
    ("AMD Instinct MI300X", None, 304, 192.0 * GIB, "MI300X", "fp8", 2614.9),
    # MI300A datasheet: 980.6 bf16
    ("AMD Instinct MI300A", None, 228, None, "MI300A", "bf16", 980.6),
    # MI325X datasheet: 1307.4 bf16, 256 GB HBM3E
    ("AMD Instinct MI325X", None, 304, 256.0 * GIB, "MI325X", "bf16", 1307.4),
    # MI355X: 256 CUs x 8192 fp8 FLOP/clk x 2.4 GHz = 5033.2; bf16 half = 2516.6
    ("AMD Instinct MI355X", None, 256, 288.0 * GIB, "MI355X", "bf16", 2516.6),
    # MI250X datasheet: 383 bf16 per OAM / 2 GCDs = 191.5
    ("AMD Instinct MI250X/MI250", None, 110, 64.0 * GIB, "MI250X (per GCD)", "bf16", 191.5),
    ("AMD Instinct MI250X", None, 110, 64.0 * GIB, "MI250X (per GCD)", "fp64", 47.85),
    # ---- later rows ----
    # A30 datasheet: 165 bf16 dense (330 sparse); 56 SMs x 2048 FLOP/clk x 1.44 GHz = 165.2e12
    ("NVIDIA A30", (8, 0), 56, 23.5 * GIB, "A30", "bf16", 165.0),
    # A30 datasheet: 82 tf32 dense (165 sparse), 10.3 fp64 tensor
    ("NVIDIA A30", (8, 0), 56, 23.5 * GIB, "A30", "tf32", 82.0),
    # L20 partner sheets: 59.8 fp32 : 119.5 bf16 : 239 fp8, the L40's dense 1 : 2 : 4
    ("NVIDIA L20", (8, 9), 92, 44.5 * GIB, "L20", "bf16", 119.5),
    ("NVIDIA L20", (8, 9), 92, 44.5 * GIB, "L20", "fp8", 239.0),
    # RTX 6000 Ada datasheet: 1457.0 fp8 sparse / 2 = 728.5; bf16 half of fp8 = 364.2
    ("NVIDIA RTX 6000 Ada Generation", (8, 9), 142, 48.0 * GIB, "RTX 6000 Ada Generation",
     "bf16", 364.2),
    ("NVIDIA RTX 6000 Ada Generation", (8, 9), 142, 48.0 * GIB, "RTX 6000 Ada Generation",
     "fp8", 728.5),
    # RTX PRO 6000 Blackwell datasheet: 4000 AI TOPS (fp4 sparse) / 2 = 2000; bf16 2000 / 4 = 500
    ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", (12, 0), 188, 97886 * 2**20,
     "RTX PRO 6000 Blackwell", "fp4", 2000.0),
    ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", (12, 0), 188, 97886 * 2**20,
     "RTX PRO 6000 Blackwell", "bf16", 500.0),
    # V100 datasheet, V100S PCIe: 130 tensor; 16.4 fp32 = 80 SMs x 64 x 2 x 1.601 GHz
    ("Tesla V100S-PCIE-32GB", (7, 0), 80, 31.7 * GIB, "V100S PCIe 32GB", "fp16", 130.0),
    ("Tesla V100S-PCIE-32GB", (7, 0), 80, 31.7 * GIB, "V100S PCIe 32GB", "fp32", 16.4),
    # P100 datasheets: SXM2 10.6 fp32 = 56 SMs x 64 x 2 x 1.48 GHz, 21.2 fp16; PCIe 9.3 / 18.7
    ("Tesla P100-SXM2-16GB", (6, 0), 56, 15.9 * GIB, "P100 SXM2 16GB", "fp32", 10.6),
    ("Tesla P100-SXM2-16GB", (6, 0), 56, 15.9 * GIB, "P100 SXM2 16GB", "fp16", 21.2),
    ("Tesla P100-PCIE-16GB", (6, 0), 56, 15.9 * GIB, "P100 PCIe 16GB", "fp16", 18.7),
    ("Tesla P100-PCIE-12GB", (6, 0), 56, 11.9 * GIB, "P100 PCIe 12GB", "fp64", 4.7),
    # H800 PCIe: 1,513 bf16 sparse / 2 = 756.5 (the H100 PCIe's); fp64 cut to 0.8
    ("NVIDIA H800 PCIe", (9, 0), 114, 79.6 * GIB, "H800 PCIe", "bf16", 756.5),
    ("NVIDIA H800 PCIe", (9, 0), 114, 79.6 * GIB, "H800 PCIe", "fp64", 0.8),
    # MI210: 104 CUs x 1024 FLOP/clk x 1.7 GHz = 181.0e12 bf16; fp64 matrix 45.3
    ("AMD Instinct MI210", None, 104, 64.0 * GIB, "MI210", "bf16", 181.0),
    ("AMD Instinct MI210", None, 104, 64.0 * GIB, "MI210", "fp64", 45.3),
    # MI350X: 256 CUs x 8192 x 2.2 GHz = 4613.7e12 fp8; bf16 half = 2306.9
    ("AMD Instinct MI350X", None, 256, 288.0 * GIB, "MI350X", "fp8", 4613.7),
    ("AMD Instinct MI350X", None, 256, 288.0 * GIB, "MI350X", "bf16", 2306.9),
]


@pytest.mark.parametrize("name, cc, sms, memory, row, dtype, tflops", REAL_DEVICES)
def test_real_device_strings(name, cc, sms, memory, row, dtype, tflops):
    spec = lookup_gpu_spec(name, compute_capability=cc, num_sms=sms,
                           total_memory_bytes=None if memory is None else int(memory))
    assert spec is not None, name
    assert spec.name == row
    assert spec.source == "datasheet"
    assert spec.mig_fraction == 1.0
    assert spec.peak_tflops(dtype) == pytest.approx(tflops, rel=1e-9)
    assert spec.peak_flops_per_sec(dtype) == pytest.approx(tflops * 1e12, rel=1e-9)
    assert "https://" in spec.citation


def test_reference_values_from_table_names():
    assert lookup_gpu_spec("H100 SXM").peak_tflops("bf16") == pytest.approx(989.4)
    assert lookup_gpu_spec("A100 SXM4 80GB").peak_tflops(torch.bfloat16) == pytest.approx(312.0)
    assert lookup_gpu_spec("B200").peak_tflops("bfloat16") == pytest.approx(2250.0)
    assert lookup_gpu_spec("MI300X").peak_tflops("bf16") == pytest.approx(1307.4)


def test_display_names_are_the_c_lookups_rule():
    # rule 0 of csrc/core/peaks/gpu_lookup.h: the C lookup itself knows display names
    for row in _C.gpu_spec_table():
        assert _C.lookup_gpu_spec(row["name"])["name"] == row["name"]
    assert _C.lookup_gpu_spec("  a100 PCIE 80gb\t")["name"] == "A100 PCIe 80GB"
    # with a hint the token rules decide: 114 SMs is not the SXM part
    assert _C.lookup_gpu_spec("H100 SXM", num_sms=114) is None


def test_bandwidth_and_fields():
    # A100 datasheet: 80GB SXM 2,039 GB/s vs 80GB PCIe 1,935 GB/s
    sxm = lookup_gpu_spec("NVIDIA A100-SXM4-80GB")
    pcie = lookup_gpu_spec("NVIDIA A100 80GB PCIe")
    assert sxm.memory_bandwidth_bytes_per_sec == pytest.approx(2039e9)
    assert pcie.peak_memory_bandwidth_tbs == pytest.approx(1.935)
    h100 = lookup_gpu_spec("NVIDIA H100 80GB HBM3")
    assert h100.compute_capability == (9, 0)
    assert h100.num_sms == 132
    assert h100.clock_rate_hz == pytest.approx(1.98e9)
    assert h100.memory_bytes == 80 * 10**9
    assert h100.vendor == "NVIDIA" and h100.architecture == "Hopper"
    assert isinstance(h100, GPUSpec)
    with pytest.raises(Exception):
        h100.name = "other"  # frozen


@pytest.mark.parametrize(
    "name, hints, expected",
    [
        ("NVIDIA H100", dict(num_sms=132, total_memory_bytes=int(79.6 * GIB)), "H100 SXM"),
        ("NVIDIA H100", dict(num_sms=114), "H100 PCIe"),
        ("NVIDIA H100", dict(num_sms=132), "H100 SXM"),  # documented default
        ("NVIDIA A10", {}, "A10"),
        ("NVIDIA L40", {}, "L40"),
        ("NVIDIA GB200", {}, "GB200"),
        ("NVIDIA B200", {}, "B200"),
    ],
)
def test_disambiguation(name, hints, expected):
    assert lookup_gpu_spec(name, **hints).name == expected


@pytest.mark.parametrize("hints", [{}, dict(num_sms=132), dict(total_memory_bytes=int(93.6 * GIB)),
                                   dict(num_sms=132, total_memory_bytes=int(93.6 * GIB))])
def test_bare_h100_never_matches_an_nvl_row(hints):
    # the NVL rows require "NVL" in the name; with the NVL's 94 GB the
    # SXM part is out too (93.6 GiB / 80 GB = 1.256 > 1.25), so nothing matches
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in ("NVIDIA H100", "NVIDIA H100 80GB HBM3", "NVIDIA H100 94GB HBM3"):
            spec = lookup_gpu_spec(name, compute_capability=(9, 0), **hints)
            assert spec is None or "NVL" not in spec.name
    assert lookup_gpu_spec("NVIDIA H100 NVL").name == "H100 NVL"


def test_later_datasheet_values():
    # Blackwell datasheet per-GPU table: GB200 FP32 80, FP64 40 (NVL72 5,760 / 72, 2,880 / 72)
    gb200 = lookup_gpu_spec("GB200")
    assert gb200.peak_tflops("fp32") == pytest.approx(80.0)
    assert gb200.peak_tflops("fp64") == pytest.approx(40.0)
    # HGX B200 per GPU: 7.7 TB/s
    assert lookup_gpu_spec("B200").peak_memory_bandwidth_tbs == pytest.approx(7.7)
    # B300: no dense int8 figure published
    assert not lookup_gpu_spec("B300").has_peak("int8")
    # MI355X (AMD spec): 256 CUs x 128 x 2.4 GHz = 78.6 fp64, x 256 = 157.3 fp32, int8 = fp8 5033.2
    mi355x = lookup_gpu_spec("MI355X")
    assert mi355x.peak_tflops("fp64") == pytest.approx(78.6)
    assert mi355x.peak_tflops("fp32") == pytest.approx(157.3)
    assert mi355x.peak_tflops("int8") == pytest.approx(5033.2)


def test_a10_is_not_a100_and_a10g_has_no_borrowed_numbers():
    with pytest.warns(UserWarning, match="A10G"):
        a10g = lookup_gpu_spec("NVIDIA A10G")  # a known device without sourced peaks
    assert a10g is not None and a10g.name == "A10G"
    assert a10g.peak_flops_by_dtype == {} and a10g.source == "unknown"
    with pytest.raises(ValueError, match="no peak is known"):
        a10g.peak_tflops("bf16")


def test_mig_slices_scale_by_sm_share():
    full = lookup_gpu_spec("A100 SXM4 40GB")
    # A100 MIG 3g.20gb: the driver reports 42 of the 108 SMs
    mig = lookup_gpu_spec("NVIDIA A100-SXM4-40GB MIG 3g.20gb",
                          compute_capability=(8, 0), num_sms=42)
    assert mig.mig_fraction == pytest.approx(42 / 108)
    assert mig.num_sms == 42
    assert mig.peak_tflops("bf16") == pytest.approx(312.0 * 42 / 108)
    assert mig.memory_bandwidth_bytes_per_sec == pytest.approx(
        full.memory_bandwidth_bytes_per_sec * 42 / 108)
    # H100 MIG 1g.10gb: 16 of 132 SMs
    h = lookup_gpu_spec("NVIDIA H100 80GB HBM3 MIG 1g.10gb", num_sms=16)
    assert h.name == "H100 SXM"
    assert h.peak_tflops("bf16") == pytest.approx(989.4 * 16 / 132)


@pytest.mark.parametrize(
    "name, hints",
    [
        ("NVIDIA GeForce RTX 2080 Ti", {}),
        ("Intel(R) Data Center GPU Max 1550", {}),
        ("NVIDIA GeForce RTX 4080 SUPER", dict(num_sms=80)),
        ("NVIDIA GeForce RTX 4090 D", {}),
        ("NVIDIA H100", {}),  # ambiguous: SXM / PCIe / NVL
        ("NVIDIA H100 PCIe", dict(num_sms=132)),  # contradicting hint
        ("NVIDIA H100 80GB HBM3 MIG 1g.10gb", {}),  # slice without its SMs
        ("Quadro RTX 6000", dict(num_sms=72)),  # Turing: neither "Ada" nor "Blackwell"
        ("NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", dict(num_sms=188)),
        ("NVIDIA RTX PRO 6000 Blackwell Server Edition", dict(num_sms=188)),
        ("NVIDIA H800", {}),  # ambiguous: SXM / PCIe
    ],
)
def test_unknown_or_ambiguous_is_none_with_exactly_one_warning(name, hints):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert lookup_gpu_spec(name, **hints) is None
        assert lookup_gpu_spec(name, **hints) is None  # warned once only
    messages = [w for w in caught if issubclass(w.category, UserWarning)]
    assert len(messages) == 1
    assert name in str(messages[0].message)
    assert "MFU_TRACKER_PEAK_TFLOPS" in str(messages[0].message)


def test_known_device_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert lookup_gpu_spec("NVIDIA L4") is not None


@pytest.mark.parametrize(
    "kwargs, exc",
    [
        (dict(name=""), ValueError),
        (dict(name="x" * 300), ValueError),
        (dict(name="NVIDIA H100", num_sms=-1), ValueError),
        (dict(name="NVIDIA H100", num_sms=0), ValueError),
        (dict(name="NVIDIA H100", total_memory_bytes=0), ValueError),
        (dict(name="NVIDIA H100", total_memory_bytes=-5), ValueError),
        (dict(name="NVIDIA H100", compute_capability=(9, 100)), ValueError),
        (dict(name=None), TypeError),
        (dict(name=b"NVIDIA H100"), TypeError),
        (dict(name="NVIDIA H100", num_sms="132"), TypeError),
        (dict(name="NVIDIA H100", num_sms=True), TypeError),
        (dict(name="NVIDIA H100", compute_capability=9), TypeError),
    ],
)
def test_bad_input(kwargs, exc):
    name = kwargs.pop("name")
    with pytest.raises(exc):
        lookup_gpu_spec(name, **kwargs)


def test_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="num_sms"):
        lookup_gpu_spec("NVIDIA H100", num_sms=-3)
    with pytest.raises(ValueError, match="name"):
        lookup_gpu_spec("   ")


def test_table():
    table = gpu_spec_table()
    names = [s.name for s in table]
    assert len(names) == len(set(names))
    assert len(table) == len(_C.gpu_spec_table()) >= 40
    for spec in table:
        assert spec.citation
        for value in spec.peak_flops_by_dtype.values():
            assert math.isfinite(value) and value > 0
    required = {"V100 SXM2 16GB", "V100 PCIe 16GB", "T4", "A10", "A10G", "A40", "RTX A6000",
                "A100 SXM4 40GB", "A100 SXM4 80GB", "A100 PCIe 40GB", "A100 PCIe 80GB",
                "A800 SXM4 80GB", "L4", "L40", "L40S", "GeForce RTX 3090", "GeForce RTX 4090",
                "GeForce RTX 4080", "GeForce RTX 5090", "H100 SXM", "H100 PCIe", "H100 NVL",
                "H800 SXM", "H20", "H200 SXM", "H200 NVL", "GH200 96GB", "B200", "B300",
                "GB200", "GB300", "MI250X (per GCD)", "MI300X", "MI300A", "MI325X", "MI355X"}
    assert required <= set(names)
    # the later rows
    assert {"A30", "L20", "RTX 6000 Ada Generation", "RTX PRO 6000 Blackwell", "V100S PCIe 32GB",
            "P100 PCIe 16GB", "P100 PCIe 12GB", "P100 SXM2 16GB", "H800 PCIe", "MI210",
            "MI350X"} <= set(names)


def test_normalize_gpu_name():
    assert _C.normalize_gpu_name("NVIDIA A100-SXM4-40GB MIG 3g.20gb") == "a100 sxm4 40gb mig 3g 20gb"
    assert _C.normalize_gpu_name("AMD Instinct MI300X") == "mi300x"
    with pytest.raises(ValueError, match="name"):
        _C.normalize_gpu_name("NVIDIA")
    with pytest.raises(TypeError):
        _C.normalize_gpu_name(3)


def test_c_lookup_argument_passing():
    by_position = _C.lookup_gpu_spec("NVIDIA H100", 9, 0, 114, None)
    by_keyword = _C.lookup_gpu_spec(name="NVIDIA H100", num_sms=114, cc_major=9)
    assert by_position["name"] == by_keyword["name"] == "H100 PCIe"
    assert by_position["peak_tflops"]["bf16"] == pytest.approx(756.5)
    with pytest.raises(TypeError):
        _C.lookup_gpu_spec()
    with pytest.raises(TypeError):
        _C.lookup_gpu_spec("x", bogus=1)
    with pytest.raises(TypeError):
        _C.lookup_gpu_spec("x", None, cc_major=9)
    with pytest.raises(TypeError):
        _C.lookup_gpu_spec("a", 1, 2, 3, 4, 5)


# ---- dtypes on a spec --------------------------------------------------------------


def test_missing_dtype_lists_the_ones_the_device_has():
    a100 = lookup_gpu_spec("A100 SXM4 80GB")
    with pytest.raises(ValueError) as info:
        a100.peak_tflops("fp8")  # Ampere has no FP8
    message = str(info.value)
    assert "fp8" in message and "bf16" in message and "tf32" in message
    assert a100.has_peak("bf16") and not a100.has_peak(torch.float8_e4m3fn)
    with pytest.raises(ValueError, match="dtype"):
        a100.peak_tflops("bf17")
    with pytest.raises(TypeError):
        a100.peak_tflops(16)


def test_torch_dtypes_accepted():
    h100 = lookup_gpu_spec("H100 SXM")
    assert h100.peak_tflops(torch.bfloat16) == pytest.approx(989.4)
    assert h100.peak_tflops(torch.float8_e5m2) == pytest.approx(1978.9)
    assert h100.peak_tflops() == pytest.approx(989.4)  # default fp16


# ---- MFU_TRACKER_PEAK_TFLOPS -------------------------------------------------------


def test_cpu_spec_is_unknown_with_one_warning():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        spec = get_gpu_spec("cpu")
        get_gpu_spec("cpu")
    assert spec.source == "unknown" and spec.peak_flops_by_dtype == {}
    assert len([w for w in caught if issubclass(w.category, UserWarning)]) == 1
    with pytest.raises(ValueError):
        spec.peak_tflops("fp32")


def test_env_override_bare_number(monkeypatch):
    monkeypatch.setenv("MFU_TRACKER_PEAK_TFLOPS", "123.5")
    spec = get_gpu_spec(torch.device("cpu"))
    assert spec.source == "user"
    assert spec.peak_tflops("bf16") == pytest.approx(123.5)
    assert spec.peak_tflops("fp32") == pytest.approx(123.5)
    assert "MFU_TRACKER_PEAK_TFLOPS" in spec.citation


def test_env_override_list(monkeypatch):
    monkeypatch.setenv("MFU_TRACKER_PEAK_TFLOPS", "bf16=989.4, fp8=1978.9")
    spec = get_gpu_spec("cpu")
    assert spec.source == "user"
    assert spec.peak_tflops("bf16") == pytest.approx(989.4)
    assert spec.peak_tflops("fp8") == pytest.approx(1978.9)
    assert not spec.has_peak("fp32")
    with pytest.raises(ValueError, match="bf16"):
        spec.peak_tflops("fp32")


@pytest.mark.parametrize("text", ["abc", "0", "-1", "nan", "inf", "1e999", "989.4x",
                                  "bf16=", "bfloat16=1", "bf16=1,bf16=2", "bf16=1,", "1 2"])
def test_env_override_malformed(monkeypatch, text):
    monkeypatch.setenv("MFU_TRACKER_PEAK_TFLOPS", text)
    with pytest.raises(ValueError, match="MFU_TRACKER_PEAK_TFLOPS"):
        get_gpu_spec("cpu")


def test_parse_peak_override_binding():
    assert _C.parse_peak_override("5", "fp4") == 5.0
    assert _C.parse_peak_override("bf16=5", "fp8") is None
    with pytest.raises(ValueError, match="dtype"):
        _C.parse_peak_override("5", "bfloat16")
    with pytest.raises(ValueError, match="MFU_TRACKER_PEAK_TFLOPS"):
        _C.parse_peak_override("x", "bf16")


# ---- user and measured peaks -------------------------------------------------------


def test_user_gpu_spec():
    spec = user_gpu_spec(400.0, name="my card", memory_bandwidth_tbs=1.5)
    assert spec.source == "user" and spec.name == "my card"
    assert spec.peak_tflops("bf16") == pytest.approx(400.0)
    assert spec.peak_memory_bandwidth_tbs == pytest.approx(1.5)
    spec2 = user_gpu_spec({"bfloat16": 100, torch.float8_e4m3fn: 200})
    assert spec2.peak_tflops("bf16") == 100 and spec2.peak_tflops("fp8") == 200
    assert not spec2.has_peak("fp32")


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf")])
def test_user_gpu_spec_rejects_bad_peaks(bad):
    with pytest.raises(ValueError, match="peak_tflops"):
        user_gpu_spec(bad)
    with pytest.raises(ValueError, match="memory_bandwidth_tbs"):
        user_gpu_spec(1.0, memory_bandwidth_tbs=bad)
    with pytest.raises(TypeError, match="peak_tflops"):
        user_gpu_spec("100")


def _recording_gemm_rate(monkeypatch):
    """The FLOPs of the matmul measure_peak_flops times, 2 n^3 for each size
    it takes (its ``_Bench.use_size`` calls)."""
    from mfu_tracker.peaks import _measure

    flops = []
    real = _measure._Bench.use_size

    def recorded(bench, n):
        flops.append(2 * n ** 3)
        return real(bench, n)

    monkeypatch.setattr(_measure._Bench, "use_size", recorded)
    return flops


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_measure_peak_flops_is_plausible(dtype, monkeypatch, every_matmul_counts):
    flops = _recording_gemm_rate(monkeypatch)
    with Bracket() as call:
        rate = measure_peak_flops(dtype, "cpu", duration_s=0.2)
    assert math.isfinite(rate)
    # the best single matmul's rate: that matmul (2 n^3 FLOPs, the core's rule) took
    # no longer than the whole call, on the test's own clock -- a bound no load can
    # break, which a rate in the wrong unit (x1e-3, x1e-12) or a per-element count
    # (/ n^3) falls below
    assert len(set(flops)) == 1 and rate >= flops[0] / call.s
    # ...and a CPU is nowhere near a PFLOP/s (load only slows a matmul down)
    assert rate < 1e15


def test_measure_peak_flops_bad_arguments():
    with pytest.raises(ValueError, match="dtype"):
        measure_peak_flops("int8")
    with pytest.raises(ValueError, match="duration_s"):
        measure_peak_flops("fp32", duration_s=0)
    with pytest.raises(ValueError, match="duration_s"):
        measure_peak_flops("fp32", duration_s=float("nan"))


def test_measured_gpu_spec(monkeypatch, every_matmul_counts):
    flops = _recording_gemm_rate(monkeypatch)
    with Bracket() as call:
        spec = measured_gpu_spec("fp32", "cpu")
    assert spec.source == "measured"
    assert "measured" in spec.name
    assert list(spec.peak_flops_by_dtype) == ["fp32"]
    assert spec.peak_flops_per_sec("fp32") >= flops[0] / call.s    # as above


def test_public_names_exported():
    for name in ("GPUSpec", "get_gpu_spec", "lookup_gpu_spec", "measure_peak_flops",
                 "measured_gpu_spec", "user_gpu_spec"):
        assert getattr(mfu_tracker, name) is getattr(gpu, name)
