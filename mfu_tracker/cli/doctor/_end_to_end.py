"""The doctor's end-to-end section: a real training loop, timed twice.

A GPT-2 (transformers, SDPA) trains ``steps`` steps with its phases marked
(forward, backward, optimizer) by a :class:`~mfu_tracker.Tracker`, and the
same points are marked on the platform's *independent* clock
(:meth:`Platform.reference_marks`: ``time.perf_counter`` on a CPU, the
programmed kernel time on the fake driver, ``torch.cuda.Event`` on a GPU).
The rows compare the two:

- end_to_end/training: the tracker's step time against the independent
  clock's over the same steps, and its MFU and tokens/s against the counted
  FLOPs and tokens over that time -- FAIL beyond ``TOLERANCE`` (2%), or for
  an MFU above 1.
- end_to_end/waterfall: each marked phase's share of the step, and the
  waterfall's shares rebuilt from the independent shares by the waterfall's
  definition (data, optimizer = their phase's share; mfu + recompute +
  compute = forward + backward; other = the unmarked rest) -- FAIL beyond
  2% of the step, or when ``mfu`` and the ``mfu_lost`` shares do not add up
  to exactly 1 (``math.fsum``).
- end_to_end/overhead: the host cost of ``track()``, ``Tracker.step()`` and
  counting a step (thread CPU time, interleaved); a figure, no threshold. The
  counting cost is the median of paired runs, given with the middle half of
  the pairs and the best-of difference: on a busy machine the pairs spread
  wider than the cost, and the row says "within the noise".
"""
from __future__ import annotations

import contextlib
import math
import statistics
import warnings
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional, Tuple

from ...timing._totals import FIELDS
from ._platform import FAKE_SPEED, FakeGpuPlatform, Platform, cpu_seconds
from ._report import Report

#: The waterfall's losses carved out of the unmarked rest: the step record's
#: per-step fields with a loss (``_C.STEP_FIELDS``; docs/waterfall.md).
_UNMARKED_LOSSES = tuple(f"mfu_lost/{field.loss}" for field in FIELDS if field.loss)

#: Largest relative (training) or absolute share-of-step (waterfall)
#: disagreement with the independent clock that still PASSes.
TOLERANCE = 0.02
#: The phases the loop marks, in order.
PHASES = ("forward", "backward", "optimizer")


@dataclass
class Loop:
    """One end-to-end training set-up."""

    platform: Platform
    model: Any
    batch: Dict[str, Any]
    opt: Any
    autocast: Any
    steps: int
    tokens: int
    what: str
    fake: Optional[FakeGpuPlatform]


class Marks:
    """The loop's points on the independent clock, each labelled with the
    phase that runs from it on (None: no phase, "step": a step boundary)."""

    def __init__(self, platform: Platform) -> None:
        self.clock = platform.reference_marks()
        self.labels: List[Optional[str]] = []

    def mark(self, label: Optional[str]) -> None:
        self.clock.mark()
        self.labels.append(label)

    def window(self, steps: int) -> Tuple[float, Dict[str, float]]:
        """Seconds per step over the tracker's window (the last ``steps - 1``
        steps: the first is its warm-up) and seconds per step of each phase."""
        times = self.clock.seconds()
        bounds = [i for i, label in enumerate(self.labels) if label == "step"]
        first, last = bounds[1], bounds[-1]
        per_step = (times[last] - times[first]) / (steps - 1)
        phases: Dict[str, float] = {}
        for i in range(first, last):
            label = self.labels[i]
            if label in PHASES:
                phases[label] = phases.get(label, 0.0) + (times[i + 1] - times[i]) / (steps - 1)
        return per_step, phases


def setup(torch: Any, platform: Platform, quick: bool, device: str) -> Loop:
    """The model, batch and optimizer: a tiny GPT-2 on a CPU, under --quick and
    on the fake driver (whose model runs on the CPU), else GPT-2 124M."""
    if quick or not device.startswith("cuda"):
        shape = dict(layers=2, width=128, seq=64, batch=2)
        steps = 6
    else:
        shape = dict(layers=12, width=768, seq=1024, batch=8)
        steps = 30
    model, batch = small_gpt2(torch, device, **shape)
    autocast = torch.autocast(device_type="cuda" if platform.kind in ("cuda", "hip") else "cpu",
                              dtype=torch.bfloat16)
    what = (f"GPT-2 {'tiny' if steps == 6 else '124M'} ({shape['layers']} layers, "
            f"{shape['width']} wide), batch {shape['batch']} x {shape['seq']}, bf16 autocast, "
            f"SDPA, on {device}")
    return Loop(platform, model, batch, torch.optim.AdamW(model.parameters(), lr=1e-4), autocast,
                steps, shape["batch"] * shape["seq"], what,
                platform if isinstance(platform, FakeGpuPlatform) else None)


def train_step(loop: Loop, tracker: Any = None, marks: Optional[Marks] = None,
               work: Tuple[float, float] = (0.0, 0.0)) -> None:
    """One step, phases marked on the tracker and on the independent clock.
    On the fake driver the step's model FLOPs, split into its counted
    forward and the rest (``work``), are queued as GPU work inside the
    forward and backward phases."""

    @contextlib.contextmanager
    def phase(name: str) -> Iterator[None]:
        if marks is not None:
            marks.mark(name)
        if tracker is not None:
            tracker.begin_phase(name)
        try:
            yield
        finally:
            if tracker is not None:
                tracker.end_phase()
            if marks is not None:
                marks.mark(None)

    with phase("forward"):
        with loop.autocast:
            loss = loop.model(**loop.batch).loss
        if loop.fake is not None and tracker is not None:
            loop.fake.enqueue(work[0], "bf16")
    with phase("backward"):
        loss.backward()
        if loop.fake is not None and tracker is not None:
            loop.fake.enqueue(work[1], "bf16")
    with phase("optimizer"):
        loop.opt.step()
        loop.opt.zero_grad(set_to_none=True)


def run(report: Report, platform: Platform, *, quick: bool, device: str, spec: Any) -> None:
    """The section's three rows (see the module doc)."""
    import torch

    from ...flops.counter import FlopCounter
    from ...tracker import Tracker

    loop = setup(torch, platform, quick, device)
    with FlopCounter() as fc:
        train_step(loop)
    flops = float(fc.model_flops)
    # the fake's GPU work: the step's model FLOPs, its counted forward first
    work = (float(fc.forward_flops), flops - float(fc.forward_flops))
    kwargs: Dict[str, Any] = {"spec": spec} if spec is not None else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # no peak on a CPU: MFU is left out, said below
        tracker = Tracker(flops, dtype="bf16", clock=platform.clock, window=loop.steps,
                          warmup=1, device=platform.device, **kwargs)
    marks = Marks(platform)
    marks.mark("step")
    tracker.step(num_tokens=loop.tokens)
    for _ in range(loop.steps):
        train_step(loop, tracker, marks, work)
        marks.mark("step")
        tracker.step(num_tokens=loop.tokens)
    tracker.flush()
    metrics = tracker.metrics(prefix="")
    tracker.close()
    step_s, phase_s = marks.window(loop.steps)
    training_row(report, loop, metrics, flops, step_s, tracker.clock)
    waterfall_row(report, metrics, step_s, phase_s)
    costs_row(report, loop, spec)


def _off(value: Optional[float], reference: float) -> Optional[float]:
    """|value / reference - 1|, or None when there is no value."""
    return None if value is None or not reference > 0 else abs(value / reference - 1.0)


def training_row(report: Report, loop: Loop, metrics: Dict[str, float], flops: float,
                 step_s: float, clock: str) -> None:
    """end_to_end/training: the tracker's figures against the independent clock."""
    mfu = metrics.get("mfu")
    peak = metrics.get("peak_tflops")
    checks = {"step_time_s": _off(metrics.get("step_time_s"), step_s),
              "tokens_per_sec": _off(metrics.get("tokens_per_sec"), loop.tokens / step_s)}
    if peak is not None:
        checks["mfu"] = _off(mfu, flops / step_s / (peak * 1e12))
    wrong = [f"{k} off by {v:.1%}" if v is not None else f"{k} missing"
             for k, v in checks.items() if v is None or v > TOLERANCE]
    if mfu is not None and mfu > 1.0:
        wrong.append(f"MFU {mfu:.3f} > 1 (a wrong peak or FLOP count)")
    figure = (f"MFU {mfu * 100:.2f}%" if mfu is not None else "MFU n/a") + (
        f", {metrics['tokens_per_sec']:,.0f} tokens/s" if "tokens_per_sec" in metrics else "")
    reference = (f"independent clock: {step_s * 1e3:.3f} ms/step over the tracker's window "
                 f"of {loop.steps - 1} steps")
    detail = "; ".join(wrong) + f" ({reference})" if wrong else (
        loop.what + ("" if mfu is not None else "; MFU needs a peak (no datasheet row for "
                     "this device)"))
    report.add("end_to_end", "training", "FAIL" if wrong else "PASS", figure,
               detail if wrong or mfu is None else "", model=loop.what, flops_per_step=flops,
               steps=loop.steps, clock=clock, metrics=metrics, reference_step_s=step_s,
               fake_speed=FAKE_SPEED if loop.fake is not None else None)


def expected_shares(mfu: float, step_s: float, phase_s: Dict[str, float]) -> Dict[str, float]:
    """The waterfall the independent clock implies, by the waterfall's
    definition: each marked phase's share, forward + backward as
    ``mfu + recompute + compute``, and ``other`` the unmarked rest."""
    share = {name: seconds / step_s for name, seconds in phase_s.items()}
    out = {f"phase/{name}": value for name, value in share.items()}
    out["optimizer"] = share.get("optimizer", 0.0)
    out["mfu+recompute+compute"] = share.get("forward", 0.0) + share.get("backward", 0.0)
    out["other"] = 1.0 - math.fsum(share.values())
    return out


def measured_shares(metrics: Dict[str, float]) -> Dict[str, float]:
    """The same quantities from the tracker's keys."""
    step = metrics["step_time_s"]
    out = {f"phase/{k[len('phase_s/'):]}": v / step for k, v in metrics.items()
           if k.startswith("phase_s/")}
    out["optimizer"] = metrics.get("mfu_lost/optimizer", 0.0)
    out["mfu+recompute+compute"] = (metrics["mfu"] + metrics.get("mfu_lost/recompute", 0.0)
                                    + metrics.get("mfu_lost/compute", 0.0))
    # the unmarked rest: other, and the losses the step record carves out of it
    out["other"] = math.fsum(metrics.get(key, 0.0)
                             for key in ("mfu_lost/other", *_UNMARKED_LOSSES))
    return out


def waterfall_row(report: Report, metrics: Dict[str, float], step_s: float,
                  phase_s: Dict[str, float]) -> None:
    """end_to_end/waterfall: the shares against the independent clock's."""
    mfu = metrics.get("mfu")
    losses = {k: v for k, v in metrics.items() if k.startswith("mfu_lost/")}
    if mfu is None or not losses:
        report.add("end_to_end", "waterfall", "SKIP", "no MFU" if mfu is None else "no phases",
                   "the waterfall needs a peak" if mfu is None else
                   "Tracker.metrics() gave no mfu_lost keys for the marked phases")
        return
    expected = expected_shares(mfu, step_s, phase_s)
    measured = measured_shares(metrics)
    wrong = [f"{k} {measured.get(k, math.nan):.2%} vs {v:.2%} on the independent clock"
             for k, v in expected.items() if not abs(measured.get(k, math.nan) - v) <= TOLERANCE]
    total = math.fsum([mfu, *losses.values()])
    if total != 1.0:
        wrong.append(f"mfu + mfu_lost/* = {total!r}, not exactly 1")
    report.add("end_to_end", "waterfall", "FAIL" if wrong else "PASS",
               ", ".join(f"{k[len('mfu_lost/'):]} {v:.1%}" for k, v in losses.items()),
               "; ".join(wrong), keys=sorted(losses), expected=expected, measured=measured,
               phase_s={k: v for k, v in metrics.items() if k.startswith("phase_s/")})


def costs_row(report: Report, loop: Loop, spec: Any) -> None:
    """end_to_end/overhead: host costs, thread CPU time, interleaved."""
    from ...timing import track
    from ...tracker import Tracker

    platform, quick = loop.platform, loop.steps == 6
    n = 2000 if quick else 20000
    kwargs: Dict[str, Any] = {"spec": spec} if spec is not None else {}
    where = dict(dtype="bf16", clock=platform.clock, device=platform.device, **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        track(1.0, **where)
        start = cpu_seconds()
        for _ in range(n):
            with track(1.0, **where):
                pass
        track_us = (cpu_seconds() - start) / n * 1e6
        tracker = Tracker(1.0, window=100, **where)
        start = cpu_seconds()
        for _ in range(n):
            tracker.step(1)
        step_us = (cpu_seconds() - start) / n * 1e6
        tracker.close()
    _counting_row(report, loop, quick, track_us, step_us, n)


def _counting_cost(loop: Loop, reps: int) -> Dict[str, float]:
    """Counting a step's FLOPs, end to end: ``reps`` pairs of the same forward +
    backward without and with a ``FlopCounter()`` (its defaults: no module table), this
    thread's CPU time, interleaved so the machine's noise hits both alike.
    The paired differences' median and quartiles, and the best-of difference
    (contention only adds time, so the two fastest runs compare cleanest)."""
    from ...flops.counter import FlopCounter

    plain, counted = [], []
    for _ in range(reps):
        for timings, counter in ((plain, contextlib.nullcontext()), (counted, FlopCounter())):
            loop.platform.synchronize()  # host time only: nothing queued before the clock starts
            start = cpu_seconds()
            with counter:
                loop.model(**loop.batch).loss.backward()
            timings.append(cpu_seconds() - start)
    diffs = sorted((c - p) * 1e6 for c, p in zip(counted, plain))
    quartiles = statistics.quantiles(diffs, n=4) if len(diffs) > 1 else [diffs[0]] * 3
    return dict(counting_us=quartiles[1], counting_q1_us=quartiles[0],
                counting_q3_us=quartiles[2], counting_best_us=(min(counted) - min(plain)) * 1e6,
                step_host_us=statistics.median(plain) * 1e6, reps=float(reps))


def _counting_row(report: Report, loop: Loop, quick: bool, track_us: float, step_us: float,
                  calls: int) -> None:
    """end_to_end/overhead: the figures, with the spread that says how far to
    trust the counting one (shown as measured, never clamped: on a loaded
    machine it can come out negative)."""
    cost = _counting_cost(loop, 15 if quick else 9)
    step = cost["step_host_us"]
    noise = cost["counting_q1_us"] <= 0 <= cost["counting_q3_us"]
    report.add("end_to_end", "overhead", "PASS",
               f"track() {track_us:.2f} us, Tracker.step() {step_us:.2f} us, counting every step "
               f"{cost['counting_us']:+,.0f} us ({cost['counting_us'] / step:+.1%}; middle half of "
               f"{cost['reps']:.0f} pairs {cost['counting_q1_us']:+,.0f} .. "
               f"{cost['counting_q3_us']:+,.0f} us, best-of {cost['counting_best_us']:+,.0f} us"
               f"{': within the noise' if noise else ''}) on a {step:,.0f} us forward + backward "
               f"(thread CPU time, {loop.platform.clock} clock)",
               track_us=track_us, tracker_step_us=step_us, calls=calls,
               clock=loop.platform.clock, **cost)


def small_gpt2(torch: Any, device: str, *, layers: int, width: int, seq: int,
               batch: int) -> Tuple[Any, Dict[str, Any]]:
    """A GPT-2 (transformers) with SDPA attention and a batch of ids + labels on ``device``.
    124M at layers=12, width=768 (the vocabulary is GPT-2's when width >= 768)."""
    import transformers

    vocab = 50257 if width >= 768 else 1024
    config = transformers.GPT2Config(n_layer=layers, n_embd=width, n_head=max(1, width // 64),
                                     n_positions=max(seq, 64), vocab_size=vocab,
                                     bos_token_id=0, eos_token_id=0, attn_implementation="sdpa",
                                     resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = transformers.GPT2LMHeadModel(config).to(device).train()
    ids = torch.randint(0, vocab, (batch, seq), device=device)
    return model, {"input_ids": ids, "labels": ids}
