"""The checks ``mfu-tracker doctor`` runs (see :mod:`mfu_tracker.cli.doctor`).

Each section is one method of :class:`Doctor`; it adds rows to the report.
Thresholds, and why:

- timing/event_timer: the core's event timer and an independent reference
  (``torch.cuda.Event``; on the fake driver, the programmed kernel times) on
  the same GEMM loop agree within ``TIMER_TOLERANCE`` (2%) -- FAIL otherwise.
- timing/zero_sync: no synchronizing driver call (event / stream / context
  synchronize, counted by the shim of :mod:`mfu_tracker.cli.doctor._shim`) over
  ``SYNC_STEPS`` Tracker steps that read ``metrics()`` every step -- more
  steps than the timer's event pool holds, so the steady state is shown past
  a pool wrap; the shim must have seen the records (else it was not in the
  path), and no step may be dropped. FAIL otherwise.
- peak/gemm_*: measured square-GEMM rate vs the datasheet row: WARN above
  it (boost clocks or a wrong row) or below ``PEAK_LOW`` (50%) of it.
- counting/*: executed FLOPs of ``FlopCounter`` equal ``FlopCounterMode``'s
  total, except the documented deviations (``DOCUMENTED_DEVIATIONS``: ops it
  counts where FlopCounterMode counts 0); model FLOPs equal across SDPA backends.
- end_to_end/*: a training loop timed by the tracker and by an independent clock
  (:mod:`._end_to_end`: FAIL beyond 2%; the costs are figures).
"""
from __future__ import annotations

import math
import sys
import warnings
from typing import Any, Dict, List, Optional, Tuple

from ..._install import extra_install
from ..._native import _C
from ._end_to_end import run as run_end_to_end
from ._end_to_end import small_gpt2
from ._platform import (
    Platform,
    TorchGpuPlatform,
    driver_library_name,
    loaded_from,
    open_platform,
)
from ._report import Report

TIMER_TOLERANCE = 0.02
SYNC_STEPS = 1200
PEAK_LOW = 0.5
PEAK_DTYPES = ("bf16", "fp16", "fp32")
#: Ops FlopCounter counts and FlopCounterMode counts as 0 (README, "Deliberate
#: differences from FlopCounterMode", each with its own test).
DOCUMENTED_DEVIATIONS = ("_scaled_dot_product_flash_attention_for_cpu", "_grouped_mm")
#: SDPA backends, in torch.nn.attention.SDPBackend names.
SDPA_BACKENDS = ("FLASH_ATTENTION", "EFFICIENT_ATTENTION", "CUDNN_ATTENTION", "MATH")


def _tflops(value: Optional[float]) -> str:
    return "n/a" if value is None else f"{value / 1e12:,.1f} TFLOP/s"


def _short_op(name: str) -> str:
    """"aten::mm" / "aten.mm.default" -> "mm"."""
    name = name.replace("::", ".")
    parts = name.split(".")
    if parts and parts[0] == "aten":
        parts = parts[1:]
    if len(parts) > 1 and parts[-1] in ("default", "out", "Tensor"):
        parts = parts[:-1]
    return parts[0] if parts else name


class Doctor:
    """Runs the sections against one device (see the module doc)."""

    def __init__(self, report: Report, device: int = 0, quick: bool = False) -> None:
        self.report = report
        self.index = device
        self.quick = quick
        self._platform: Optional[Platform] = None
        self._platform_error: Optional[str] = None
        self._spec_done = False
        self._spec: Any = None
        try:
            self._platform = open_platform(device)
        except Exception as exc:  # reported by the environment / device checks
            self._platform_error = f"{type(exc).__name__}: {exc}"

    # ---- helpers ----------------------------------------------------------

    @property
    def platform_kind(self) -> str:
        return self._platform.kind if self._platform is not None else "unavailable"

    def _gpu(self) -> Optional[Platform]:
        p = self._platform
        return p if p is not None and p.gpu else None

    def _no_gpu_reason(self) -> str:
        if self._platform_error:
            return f"no usable device: {self._platform_error}"
        import torch

        built = torch.version.cuda or getattr(torch.version, "hip", None)
        return ("no CUDA/ROCm device visible to torch "
                f"(torch {torch.__version__}, {'built with ' + built if built else 'a CPU build'})")

    def _skip(self, section: str, name: str) -> None:
        """A GPU row on a machine without one: SKIP -- or FAIL when a device was
        asked for and could not be opened (a bad --device, a broken install)."""
        if self._platform_error:
            self.report.add(section, name, "FAIL", "no device", self._no_gpu_reason())
        else:
            self.report.add(section, name, "SKIP", "skipped", self._no_gpu_reason())

    def _spec_of(self, platform: Platform) -> Any:
        if not self._spec_done:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                self._spec = platform.spec()
            self._spec_done = True
        return self._spec

    def _timer(self, platform: Platform) -> Any:
        return _C.MarkTimer(platform.clock)

    # ---- environment -------------------------------------------------------

    def environment(self) -> None:
        import torch

        from ...flops.counter import counter_backend

        add = self.report.add
        hip = getattr(torch.version, "hip", None)
        add("environment", "versions", "PASS",
            f"python {sys.version.split()[0]}, torch {torch.__version__}, "
            f"CUDA {torch.version.cuda or '-'}, ROCm {hip or '-'}",
            torch=torch.__version__, cuda=torch.version.cuda, rocm=hip)
        self._driver_row()
        backend = counter_backend()
        if backend == "torch-ext":
            add("environment", "flop_counter", "PASS", "torch-ext (the C++ op observer)",
                backend=backend)
        else:
            add("environment", "flop_counter", "WARN", f"{backend} (the fallback)",
                "the _torch extension did not load: FlopCounter uses the TorchDispatchMode "
                "fallback (same formulas, slower); build it with `mfu-tracker build-ext --force` "
                "(the reason is in its output)", backend=backend)
        self._nvml_row()

    def _driver_row(self) -> None:
        add = self.report.add
        platform = self._gpu()
        if platform is None:
            self._skip("environment", "driver")
            return
        api = "hip" if platform.clock == "hip" else "cuda"
        name = driver_library_name(api)
        try:
            timer = self._timer(platform)
        except RuntimeError as exc:
            add("environment", "driver", "FAIL", f"{name}: not usable",
                f"the core's GPU clock cannot start: {exc}", library=name)
            return
        del timer
        where = loaded_from(name) or "(not found in /proc/self/maps)"
        version = None
        if platform.driver is not None:
            try:
                version = platform.driver.version()
            except Exception:  # an old driver without the call: no version shown
                version = None
        kind = " (the test suite's fake driver)" if platform.kind == "fake" else ""
        add("environment", "driver", "PASS",
            f"{name} -> {where}{kind}" + (f", driver API {version}" if version else ""),
            library=name, path=where, driver_version=version, fake=platform.kind == "fake")

    def _nvml_row(self) -> None:
        add = self.report.add
        nvml = getattr(_C, "Nvml", None)
        try:  # the telemetry module: NVML's device id of a torch device
            from ...device._telemetry import device_id_of
        except ImportError:
            device_id_of = None
        if nvml is None or device_id_of is None:
            add("environment", "nvml", "SKIP", "not built",
                "this build of mfu_tracker._C has no NVML entry point")
            return
        platform = self._gpu()
        if not isinstance(platform, TorchGpuPlatform) or platform.kind != "cuda":
            add("environment", "nvml", "SKIP", "no NVIDIA device",
                self._no_gpu_reason() if platform is None else "NVML reads NVIDIA devices only "
                f"(platform {platform.kind})")
            return
        import torch

        ident = device_id_of(torch, platform.index)
        if ident is None:
            add("environment", "nvml", "SKIP", "no device id",
                f"torch {torch.__version__} gives neither the UUID nor the PCI bus id NVML needs")
            return
        try:
            figures, failure = nvml(ident).read()
        except Exception as exc:  # NVML missing or refusing: a warning, never a crash
            add("environment", "nvml", "WARN", "unavailable", f"{type(exc).__name__}: {exc}")
            return
        figure = (f"{figures.get('power_w')} W, SM clock {figures.get('sm_clock_mhz')} / "
                  f"{figures.get('sm_clock_max_mhz')} MHz, throttled {figures.get('throttled')}")
        add("environment", "nvml", "WARN" if failure else "PASS", figure, failure or "",
            device_id=ident, **figures)

    # ---- device ------------------------------------------------------------

    def device(self) -> None:
        add = self.report.add
        platform = self._gpu()
        if platform is None:
            self._skip("device", "properties")
            self._skip("device", "table_row")
            return
        props = platform.properties()
        assert props is not None
        add("device", "properties", "PASS",
            f"{props.name}, {props.num_sms} SMs, {props.memory_bytes / 2**30:.1f} GiB, "
            f"cc {props.cc_major}.{props.cc_minor} (from the {props.source})",
            name=props.name, num_sms=props.num_sms, memory_bytes=props.memory_bytes,
            cc=[props.cc_major, props.cc_minor])
        if isinstance(platform, TorchGpuPlatform) and props.source == "driver API":
            torch_name = platform.torch_name()
            if torch_name != props.name:
                add("device", "torch_agrees", "WARN", f"torch: {torch_name}",
                    f"the driver's device {platform.index} is {props.name!r}: "
                    "CUDA_DEVICE_ORDER differs between torch and the driver API?")
        spec = self._spec_of(platform)
        if spec is None or not spec.peak_flops_by_dtype:
            add("device", "table_row", "WARN", f"{props.name}: not in the peak table",
                "MFU needs a peak: give it with Tracker(..., peak_tflops=X) / track(..., "
                "peak_tflops=X), or MFU_TRACKER_PEAK_TFLOPS=X (or 'bf16=X,fp32=Y'), or a "
                "measured one: measured_gpu_spec('bf16', device); `mfu-tracker gpus` lists the "
                "table", name=props.name)
            return
        peaks = ", ".join(f"{d} {spec.peak_tflops(d):g}" for d in PEAK_DTYPES if spec.has_peak(d))
        add("device", "table_row", "PASS",
            f"{spec.name} [{spec.source}]: {peaks} TFLOP/s, "
            f"{spec.peak_memory_bandwidth_tbs:.2f} TB/s",
            row=spec.name, source=spec.source, citation=spec.citation,
            peaks_tflops={d: spec.peak_tflops(d) for d in PEAK_DTYPES if spec.has_peak(d)})

    # ---- timing --------------------------------------------------------------

    def timing(self) -> None:
        platform = self._gpu()
        if platform is None:
            self._skip("timing", "event_timer")
            self._skip("timing", "zero_sync")
            return
        self._event_timer(platform)
        self._zero_sync(platform)

    def _event_timer(self, platform: Platform) -> None:
        add = self.report.add
        n, iters = (4096, 100) if self.quick else (4096, 400)  # ~20 / 80 ms on an H100
        try:
            timer = self._timer(platform)
        except RuntimeError as exc:
            add("timing", "event_timer", "FAIL", "no GPU clock", str(exc))
            return
        platform.gemm(n, "bf16", 2)  # warm-up: kernel selection, allocation
        platform.synchronize()
        rows: List[Tuple[float, float]] = []
        for _ in range(3):
            reference = platform.reference_timer()
            reference.start()
            first = timer.mark(platform.stream())
            platform.gemm(n, "bf16", iters)
            last = timer.mark(platform.stream())
            ref_s = reference.stop()
            ours = timer.elapsed_s(first, last, wait=True)
            rows.append((ours if ours is not None else math.nan, ref_s))
        deviations = [abs(ours / ref - 1) if ref > 0 else math.inf for ours, ref in rows]
        worst = max(deviations)
        what = ("torch.cuda.Event" if isinstance(platform, TorchGpuPlatform)
                else "the fake's programmed kernel times")
        figure = (f"ours {rows[0][0] * 1e3:.3f} ms vs {what} {rows[0][1] * 1e3:.3f} ms; "
                  f"worst of 3 off by {worst * 100:.3f}%")
        ok = worst <= TIMER_TOLERANCE
        add("timing", "event_timer", "PASS" if ok else "FAIL", figure,
            "" if ok else f"the event timer disagrees with {what} by more than "
            f"{TIMER_TOLERANCE * 100:g}% on the same {iters} x {n}^3 bf16 GEMM loop",
            ours_s=[r[0] for r in rows], reference_s=[r[1] for r in rows],
            worst_deviation=worst, reference=what)

    def _zero_sync(self, platform: Platform) -> None:
        from ._shim import run_sync_check

        add = self.report.add
        if platform.clock != "cuda":
            add("timing", "zero_sync", "SKIP", "CUDA only",
                "the counting shim speaks the CUDA driver API; the HIP runtime has no "
                "pass-through shim yet")
            return
        try:
            result = run_sync_check(SYNC_STEPS, platform.index)
        except (RuntimeError, OSError) as exc:
            add("timing", "zero_sync", "FAIL", "could not run", str(exc))
            return
        syncs = result["sync_calls"]
        records = result["calls"].get("cuEventRecord", 0)
        problems = []
        if syncs:
            problems.append(f"{syncs} synchronizing call(s): " + ", ".join(
                f"{k} {v}" for k, v in result["calls"].items() if k.endswith("Synchronize") and v))
        if result["clock"] != "cuda":
            problems.append(f"the tracker ran on the {result['clock']} clock, not the GPU's")
        if records < result["steps"]:
            problems.append(f"the shim saw {records} cuEventRecord for {result['steps']} steps: "
                            "it was not in the core's path")
        if result["steps_dropped"]:
            problems.append(f"{result['steps_dropped']} step(s) dropped")
        if result.get("target_error"):
            problems.append(f"the shim could not open {result['target']}: {result['target_error']}")
        problems += [f"warning: {w}" for w in result.get("warnings", [])]
        figure = (f"{syncs} synchronizing calls over {result['steps']} steps "
                  f"({records} records, {result['calls'].get('cuEventQuery', 0)} queries, "
                  f"{result['steps_pending']} pending at the end)")
        add("timing", "zero_sync", "FAIL" if problems else "PASS", figure, "; ".join(problems),
            **result)

    # ---- peak -----------------------------------------------------------------

    def peak(self) -> None:
        platform = self._gpu()
        if platform is None:
            for dtype in PEAK_DTYPES:
                self._skip("peak", f"gemm_{dtype}")
            self._skip("peak", "mfu_self_check")
            return
        spec = self._spec_of(platform)
        try:
            timer = self._timer(platform)
        except RuntimeError as exc:
            self.report.add("peak", "gemm", "FAIL", "no GPU clock", str(exc))
            return
        for dtype in PEAK_DTYPES:
            self._peak_row(platform, timer, spec, dtype)
        self._self_check_row(platform, spec)

    def _self_check_row(self, platform: Platform, spec: Any) -> None:
        """MFU of a GEMM loop against the tensor pipes' counters (_self_check.py)."""
        from ...device._telemetry import device_id_of
        from ._self_check import self_check_row

        ident = None
        if isinstance(platform, TorchGpuPlatform) and platform.kind == "cuda":
            import torch

            ident = device_id_of(torch, platform.index)
        self_check_row(self.report.add, platform, spec, ident, self.quick)

    def _peak_row(self, platform: Platform, timer: Any, spec: Any, dtype: str) -> None:
        add = self.report.add
        n = 4096 if self.quick else (8192 if dtype != "fp32" else 4096)
        iters = 10 if self.quick else 50
        platform.gemm(n, dtype, 2)
        platform.synchronize()
        best = 0.0
        for _ in range(3):
            first = timer.mark(platform.stream())
            flops = platform.gemm(n, dtype, iters)
            last = timer.mark(platform.stream())
            seconds = timer.elapsed_s(first, last, wait=True)
            if seconds:
                best = max(best, flops / seconds)
        datasheet = spec.peak_flops_per_sec(dtype) if spec is not None and spec.has_peak(dtype) else None
        data = {"measured_flops_per_sec": best, "datasheet_flops_per_sec": datasheet, "n": n}
        if datasheet is None:
            add("peak", f"gemm_{dtype}", "WARN", f"{_tflops(best)} measured, no datasheet row",
                "no datasheet peak to compare with (see device/table_row)", **data)
            return
        ratio = best / datasheet
        figure = f"{_tflops(best)} = {ratio * 100:.1f}% of the datasheet {_tflops(datasheet)}"
        if ratio > 1:
            add("peak", f"gemm_{dtype}", "WARN", figure,
                "above the datasheet: boost clocks, or the wrong table row", ratio=ratio, **data)
        elif ratio < PEAK_LOW:
            add("peak", f"gemm_{dtype}", "WARN", figure,
                f"below {PEAK_LOW * 100:g}% of the datasheet: throttling, a shared or "
                "misconfigured device, or the wrong table row", ratio=ratio, **data)
        else:
            add("peak", f"gemm_{dtype}", "PASS", figure, ratio=ratio, **data)

    # ---- counting ---------------------------------------------------------------

    def _model_device(self) -> str:
        p = self._platform
        return p.torch_device if p is not None else "cpu"

    def _transformers_missing(self, section: str, name: str) -> bool:
        try:
            import transformers  # noqa: F401
        except ImportError as exc:
            self.report.add(section, name, "SKIP", "transformers not installed",
                            f"the GPT-2 checks need transformers ({exc}): "
                            f"{extra_install('hf')}")
            return True
        return False

    def counting(self) -> None:
        if self._transformers_missing("counting", "gpt2"):
            return
        import torch
        from torch.nn.attention import SDPBackend, sdpa_kernel
        from torch.utils.flop_counter import FlopCounterMode

        from ...flops.counter import FlopCounter

        add = self.report.add
        device = self._model_device()
        model, batch = small_gpt2(torch, device, layers=2, width=128, seq=64, batch=2)
        model_flops: Dict[str, int] = {}
        # bf16 autocast on a GPU (flash and cuDNN attention need 16-bit inputs);
        # fp32 on the CPU, whose flash kernel takes it.
        on_gpu = device.startswith("cuda")
        autocast = torch.autocast(device_type="cuda" if on_gpu else "cpu", dtype=torch.bfloat16,
                                  enabled=on_gpu)
        for backend in SDPA_BACKENDS:
            name = backend.lower().replace("_attention", "")
            try:
                with sdpa_kernel([getattr(SDPBackend, backend)]), autocast:
                    with FlopCounter() as fc:
                        model(**batch).loss.backward()
                    with FlopCounterMode(display=False) as fm:
                        model(**batch).loss.backward()
            except RuntimeError as exc:
                add("counting", f"sdpa_{name}", "SKIP", "backend not available here",
                    f"{backend} on {device}: {str(exc).splitlines()[0][:160]}")
                continue
            reference = {_short_op(str(op)): int(v)
                         for op, v in fm.get_flop_counts().get("Global", {}).items()}
            ours = {_short_op(op): int(v[1]) for op, v in fc.by_op.items()}
            deviation = sum(v for op, v in ours.items()  # forward and backward kernels
                            if op.startswith(DOCUMENTED_DEVIATIONS) and not reference.get(op))
            expected = fm.get_total_flops() + deviation
            model_flops[name] = fc.model_flops
            note = f" (+{deviation:,} documented: FlopCounterMode counts 0)" if deviation else ""
            figure = (f"executed {fc.executed_flops:,} vs FlopCounterMode "
                      f"{fm.get_total_flops():,}{note}; model {fc.model_flops:,}")
            data = {"executed": fc.executed_flops, "flop_counter_mode": fm.get_total_flops(),
                    "documented_deviation": deviation, "model": fc.model_flops,
                    "by_op": ours, "reference_by_op": reference, "device": device}
            if fc.executed_flops == expected and not fc.errors:
                add("counting", f"sdpa_{name}", "PASS", figure, **data)
            else:
                diff = {op: (ours.get(op, 0), reference.get(op, 0))
                        for op in sorted(set(ours) | set(reference))
                        if ours.get(op, 0) != reference.get(op, 0)}
                add("counting", f"sdpa_{name}", "FAIL", figure,
                    f"per op (ours, FlopCounterMode) where they differ: {diff}; "
                    f"{fc.errors} uncounted call(s)", **data)
        if not model_flops:
            add("counting", "model_flops_across_backends", "FAIL", "no SDPA backend ran")
            return
        values = set(model_flops.values())
        figure = ", ".join(f"{k} {v:,}" for k, v in model_flops.items())
        if len(model_flops) == 1:
            add("counting", "model_flops_across_backends", "PASS", figure,
                "one backend only", **model_flops)
        else:
            add("counting", "model_flops_across_backends", "PASS" if len(values) == 1 else "FAIL",
                figure, "" if len(values) == 1 else "model FLOPs must not depend on the kernel",
                **model_flops)

    # ---- end to end ----------------------------------------------------------------

    def end_to_end(self) -> None:
        if self._transformers_missing("end_to_end", "training"):
            return
        platform = self._platform or Platform(self.index)
        spec = self._spec_of(platform) if platform.gpu else None
        run_end_to_end(self.report, platform, quick=self.quick, device=self._model_device(),
                       spec=spec)


__all__ = ["Doctor", "TIMER_TOLERANCE", "SYNC_STEPS", "PEAK_LOW", "DOCUMENTED_DEVIATIONS"]
