"""What to change: the advice rules, one table (:data:`RULES`).

``mfu-tracker advise LOG`` (and the end of ``mfu-tracker report``) turns a
run's measurements into a short ranked list of levers. The inputs
(:class:`Evidence`) are the run's newest metrics line that carries the
waterfall (``{p}/mfu_lost/*``, ``comm_s/*``, ``memory/*``,
``step_time_s``) and its newest kernel breakdown (a ``breakdown`` record,
``Tracker(profile_steps=)``; from TensorBoard, the ``kernel_share/*`` keys).

Each rule reads named figures, and either

* **advises**: the evidence (each figure with its key), the lever, and an
  upper bound on what the lever can return -- the share of the step it
  could remove at most (a lever cannot remove more than the time it acts
  on; the GEMM rule's bound is the GEMM time beyond its time at peak);
* **is silent**: the figures are below its threshold (nothing to say);
* or **says what to turn on**: a figure it needs is missing and the
  figures present do not already rule it out. It never advises without
  evidence.

Advice is ranked by its bound, largest first. The thresholds are the
table's (``threshold``), with the reason for each in docs/kernel-breakdown.md.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from ..breakdown._record import Breakdown, figures_of_record
from ..timing._metrics import metric_key
from ._records import Run

__all__ = ["Advice", "Evidence", "Needs", "RULES", "Rule", "advise", "evidence_of_run"]


@dataclass
class Advice:
    """One lever: the rule, its bound (a share of the step), what it rests on."""

    rule: str
    lever: str
    bound: float
    evidence: str
    of: str = "of the step"       # what the bound is a share of


@dataclass
class Needs:
    """A rule that could not judge: what it needs and how to turn it on."""

    rule: str
    needs: str


Outcome = Union[Advice, Needs, None]


@dataclass
class Evidence:
    """The figures the rules read (module docstring)."""

    prefix: str
    metrics: Optional[Mapping[str, Any]] = None   # the newest line with the waterfall
    breakdown: Optional[Breakdown] = None
    breakdown_step: Optional[int] = None
    ranks: Optional[int] = None                   # the run record's world size

    def value(self, name: str) -> Optional[float]:
        """``{prefix}/name`` of the metrics line, a finite number or None."""
        if self.metrics is None:
            return None
        value = self.metrics.get(metric_key(self.prefix, name))
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
            return None
        return float(value)

    def lost(self, cause: str) -> Optional[float]:
        return self.value(f"mfu_lost/{cause}")

    def share(self, row: str) -> Optional[float]:
        """A kernel class's (or idle's) share of the profiled step."""
        return None if self.breakdown is None else self.breakdown.share(row)

    def where(self) -> str:
        step = self.metrics.get("step") if self.metrics is not None else None
        return f"the window logged at step {step}" if step is not None else "the last window"

    def profiled(self) -> str:
        return (f"the profiled step {self.breakdown_step}" if self.breakdown_step is not None
                else "the profiled step")


@dataclass(frozen=True)
class Rule:
    """One advice rule: its name, the lever, its threshold(s) in words, and
    its check over the evidence."""

    name: str
    lever: str
    threshold: str
    check: Callable[[Evidence, "Rule"], Outcome]


def _pct(share: float) -> str:
    return f"{share * 100:.1f}%"


def _key(evidence: Evidence, name: str) -> str:
    return metric_key(evidence.prefix, name)


#: Turn-on texts, one per input.
WATERFALL = ("the waterfall (mfu_lost/*): a peak for MFU and the step's phases marked "
             "(the integrations mark them; by hand: tracker.phase())")
HFU = ("executed FLOPs for mfu_lost/recompute (the integrations count them; by hand: "
       "Tracker(executed_flops_per_step=) or step(executed_flops=))")
BREAKDOWN = "a kernel breakdown: Tracker(profile_steps=N) (or the integrations' profile_steps=)"
MEMORY = "memory headroom (memory/*): Tracker(memory=True) on a CUDA / ROCm device"
COMM = ("exposed communication by kind (comm_s/*): a process group and the communication "
        "observer (Tracker(comm=None), the default)")

#: Thresholds (docs/kernel-breakdown.md, "Advice", gives the reasons).
RECOMPUTE_MIN = 0.05          # recompute share of the step
HEADROOM_MIN = 0.20           # free device memory (1 - memory/peak_reserved_frac)
FUSABLE_MIN = 0.20            # elementwise + reduction share of the profiled step
IDLE_MIN = 0.10               # idle share of the profiled step
SHORT_KERNEL_S = 50e-6        # busy time per kernel below which the host sets the pace
ALL_GATHER_MIN = 0.05         # exposed all-gather share of the step
REDUCTION_COMM_MIN = 0.05     # exposed reduce-scatter + all-reduce share of the step
OPTIMIZER_MIN = 0.05          # optimizer share of the step
DATA_MIN = 0.05               # data share of the step
GEMM_SHARE_MIN = 0.20         # GEMM share of the profiled step worth a look
GEMM_PEAK_MAX = 0.50          # GEMM FLOP/s over the peak below which GEMMs run slow
GEMM_SHORT_S = 50e-6          # mean GEMM kernel below which the shapes are small
MOE_IMBALANCE_MIN = 1.25      # busiest expert's tokens over the mean (docs/moe.md)
MOE_PADDED_MIN = 0.05         # padded rows' share of the expert GEMMs' FLOPs
MOE_DROPPED_MIN = 0.01        # dropped share of the token-expert assignments


def _has_waterfall(ev: Evidence) -> bool:
    base = metric_key(ev.prefix, "mfu_lost") + "/"
    return ev.metrics is not None and any(key.startswith(base) for key in ev.metrics)


def _headroom(ev: Evidence) -> Tuple[Optional[float], str]:
    frac = ev.value("memory/peak_reserved_frac")
    if frac is None:
        return None, ""
    return 1.0 - frac, (f"; memory headroom {_pct(1.0 - frac)} "
                        f"({_key(ev, 'memory/peak_reserved_frac')} {frac:.3f})")


def _recompute(ev: Evidence, rule: Rule) -> Outcome:
    share = ev.lost("recompute")
    if share is None:
        return Needs(rule.name, HFU if _has_waterfall(ev) else WATERFALL)
    if share < RECOMPUTE_MIN:
        return None
    headroom, text = _headroom(ev)
    evidence = f"recompute {_pct(share)} of the step ({_key(ev, 'mfu_lost/recompute')})"
    if headroom is None:
        return Needs(rule.name, f"{evidence}; whether memory allows less checkpointing: {MEMORY}")
    if headroom < HEADROOM_MIN:
        return None
    return Advice(rule.name, rule.lever, share, evidence + text)


def _compile(ev: Evidence, rule: Rule) -> Outcome:
    b = ev.breakdown
    if b is None:
        return Needs(rule.name, BREAKDOWN)
    share = (b.share("elementwise") or 0.0) + (b.share("reduction") or 0.0)
    if b.compiled or share < FUSABLE_MIN:
        return None
    return Advice(rule.name, rule.lever, share,
                  f"elementwise + reduction {_pct(share)} of {ev.profiled()} "
                  f"(kernel_share/elementwise {b.share('elementwise'):.3f}, "
                  f"kernel_share/reduction {b.share('reduction'):.3f}); no compiled region ran")


def _launch(ev: Evidence, rule: Rule) -> Outcome:
    b = ev.breakdown
    if b is None:
        return Needs(rule.name, BREAKDOWN)
    idle, mean = b.share("idle") or 0.0, b.mean_s()
    if idle < IDLE_MIN or mean is None or mean >= SHORT_KERNEL_S:
        return None
    where = "kernel (GPU)" if b.timeline == "device" else "op (CPU)"
    _, memory = _headroom(ev)
    return Advice(rule.name, rule.lever, idle,
                  f"idle {_pct(idle)} of {ev.profiled()} (kernel_share/idle {idle:.3f}) with "
                  f"{mean * 1e6:.1f} us of work per {where}{memory}")


def _observed(ev: Evidence) -> bool:
    """The communication observer was on: the line holds some ``comm_s/*``."""
    base = metric_key(ev.prefix, "comm_s") + "/"
    return ev.metrics is not None and any(key.startswith(base) for key in ev.metrics)


def _comm_kinds(ev: Evidence, rule: Rule, kinds: Sequence[str], minimum: float) -> Outcome:
    step = ev.value("step_time_s")
    seconds = [ev.value(f"comm_s/{kind}") for kind in kinds]
    if all(s is None for s in seconds):
        if ev.ranks is not None and ev.ranks > 1 and not _observed(ev):
            return Needs(rule.name, COMM)
        return None       # one process, or the observer saw none of these kinds
    if step is None or step <= 0:
        return Needs(rule.name, f"the step time ({_key(ev, 'step_time_s')})")
    share = sum(s for s in seconds if s is not None) / step
    if share < minimum:
        return None
    keys = ", ".join(f"{_key(ev, 'comm_s/' + k)} {s:.4g} s" for k, s in zip(kinds, seconds)
                     if s is not None)
    return Advice(rule.name, rule.lever, share,
                  f"exposed {' + '.join(kinds)} {_pct(share)} of the step ({keys} of "
                  f"{_key(ev, 'step_time_s')} {step:.4g} s)")


def _all_gather(ev: Evidence, rule: Rule) -> Outcome:
    return _comm_kinds(ev, rule, ("all_gather",), ALL_GATHER_MIN)


def _reductions(ev: Evidence, rule: Rule) -> Outcome:
    return _comm_kinds(ev, rule, ("reduce_scatter", "all_reduce"), REDUCTION_COMM_MIN)


def _optimizer(ev: Evidence, rule: Rule) -> Outcome:
    share = ev.lost("optimizer")
    if share is not None:
        evidence = f"optimizer {_pct(share)} of the step ({_key(ev, 'mfu_lost/optimizer')})"
    elif ev.breakdown is not None:
        share = ev.share("optimizer") or 0.0
        evidence = f"optimizer {_pct(share)} of {ev.profiled()} (kernel_share/optimizer)"
    else:   # a waterfall without mfu_lost/optimizer lacks only the phase, not the waterfall
        need = ("the optimizer phase marked (tracker.phase('optimizer') around "
                "optimizer.step(); the integrations mark it)" if _has_waterfall(ev) else WATERFALL)
        return Needs(rule.name, f"{need}, or {BREAKDOWN}")
    return Advice(rule.name, rule.lever, share, evidence) if share >= OPTIMIZER_MIN else None


def _data(ev: Evidence, rule: Rule) -> Outcome:
    share = ev.lost("data")
    if share is None:
        return Needs(rule.name, "the data phase marked (tracker.phase('data') around the "
                     "loader; the integrations mark it)" if _has_waterfall(ev) else WATERFALL)
    if share < DATA_MIN:
        return None
    return Advice(rule.name, rule.lever, share,
                  f"data {_pct(share)} of the step ({_key(ev, 'mfu_lost/data')})")


def _gemm(ev: Evidence, rule: Rule) -> Outcome:
    b = ev.breakdown
    if b is None:
        return Needs(rule.name, BREAKDOWN)
    share, mean = b.share("gemm") or 0.0, b.mean_s("gemm")
    if share < GEMM_SHARE_MIN or mean is None or mean >= GEMM_SHORT_S:
        return None
    peak = b.peak_share("gemm")
    if peak is None:
        return Needs(rule.name, f"GEMM {_pct(share)} of {ev.profiled()} in kernels of "
                     f"{mean * 1e6:.1f} us: its share of the peak needs a peak (peak_tflops=) "
                     f"and counted FLOPs")
    if peak >= GEMM_PEAK_MAX:
        return None
    _, memory = _headroom(ev)
    return Advice(rule.name, rule.lever, share * (1.0 - peak),
                  f"GEMM {_pct(share)} of {ev.profiled()} at {_pct(peak)} of the peak "
                  f"({b.tflops('gemm'):.4g} TFLOP/s), {mean * 1e6:.1f} us per kernel{memory}")


def _moe_straggler(ev: Evidence) -> str:
    layer, expert = ev.value("moe/straggler_layer"), ev.value("moe/straggler_expert")
    step = ev.value("moe/sampled_step")
    where = f" on step {step:.0f}" if step is not None else ""
    if layer is None or expert is None:
        return where
    return f"; straggler expert {expert:.0f} of MoE layer {layer:.0f}{where}"


def _moe_balancing(ev: Evidence, rule: Rule) -> Outcome:
    imbalance = ev.value("moe/imbalance")
    if imbalance is None or imbalance < MOE_IMBALANCE_MIN:
        return None     # not an MoE run, or balanced enough
    high, mean = ev.value("moe/tokens_per_expert_max"), ev.value("moe/tokens_per_expert_mean")
    tokens = f", {high:.0f} tokens at most vs {mean:.4g} mean" if high and mean else ""
    return Advice(rule.name, rule.lever, 1.0 - 1.0 / imbalance,
                  f"expert imbalance {imbalance:.3f} ({_key(ev, 'moe/imbalance')}){tokens}"
                  f"{_moe_straggler(ev)}: the experts' GEMMs wait for the busiest one once "
                  f"experts are spread over ranks; bound: 1 - 1/imbalance of the MoE layers' time")


def _moe_share(ev: Evidence, rule: Rule, key: str, minimum: float, count: str,
               what: str, of: str = "of the step") -> Outcome:
    """A rule on one ``moe/*`` share (``count``: the key of its count)."""
    share = ev.value(key)
    if share is None or share < minimum:
        return None
    n = ev.value(count)
    return Advice(rule.name, rule.lever, share,
                  f"{what.format(pct=_pct(share))} ({_key(ev, key)}"
                  + (f", {n:.0f} {count.rpartition('_')[2]}" if n is not None else "") + ")",
                  of=of)


def _moe_padding(ev: Evidence, rule: Rule) -> Outcome:
    return _moe_share(ev, rule, "moe/padded_flops_share", MOE_PADDED_MIN, "moe/padded_rows",
                      "padded rows {pct} of the expert GEMMs' FLOPs: bound, that share of "
                      "the MoE layers' GEMM time")


def _moe_capacity(ev: Evidence, rule: Rule) -> Outcome:
    return _moe_share(ev, rule, "moe/dropped_share", MOE_DROPPED_MIN, "moe/dropped_tokens",
                      "dropped {pct} of the token-expert assignments: tokens the model never "
                      "trains on", of="of the routed tokens (not of the step)")


#: The rules, in the order they are evaluated (advice is ranked by bound).
RULES: Tuple[Rule, ...] = (
    Rule("selective_checkpointing", "selective activation checkpointing (or none) instead of "
         "full: recompute less", f"mfu_lost/recompute >= {RECOMPUTE_MIN} and memory headroom "
         f">= {HEADROOM_MIN}", _recompute),
    Rule("compile", "torch.compile: fuse the elementwise and reduction kernels",
         f"kernel_share elementwise + reduction >= {FUSABLE_MIN}, no compiled region", _compile),
    Rule("launch_bound", "larger micro-batch, CUDA graphs (torch.compile(mode='reduce-overhead')), "
         "torch.compile: fewer, longer kernels", f"kernel_share/idle >= {IDLE_MIN} and busy time "
         f"per kernel < {SHORT_KERNEL_S * 1e6:.0f} us", _launch),
    Rule("fsdp_prefetch", "FSDP prefetching (more layers ahead) or a larger shard group (HSDP)",
         f"comm_s/all_gather / step_time_s >= {ALL_GATHER_MIN}", _all_gather),
    Rule("gradient_reduction", "overlap gradient reduction with backward (DDP bucket_cap_mb, "
         "FSDP backward prefetch), reduce in bf16", f"(comm_s/reduce_scatter + all_reduce) / "
         f"step_time_s >= {REDUCTION_COMM_MIN}", _reductions),
    Rule("fused_optimizer", "a fused or foreach optimizer (fused=True), or the optimizer in "
         "backward", f"mfu_lost/optimizer (else kernel_share/optimizer) >= {OPTIMIZER_MIN}",
         _optimizer),
    Rule("data_loading", "more DataLoader workers, pin_memory=True, prefetching",
         f"mfu_lost/data >= {DATA_MIN}", _data),
    Rule("gemm_shapes", "larger micro-batch (larger GEMMs), or less tensor parallelism",
         f"kernel_share/gemm >= {GEMM_SHARE_MIN}, GEMM at < {GEMM_PEAK_MAX} of the peak, "
         f"< {GEMM_SHORT_S * 1e6:.0f} us per GEMM kernel", _gemm),
    Rule("moe_balancing", "the router's balancing: raise the auxiliary-loss coefficient (or "
         "the bias update rate of aux-loss-free balancing), or a smaller expert-parallel degree",
         f"moe/imbalance >= {MOE_IMBALANCE_MIN}", _moe_balancing),
    Rule("moe_padding", "a smaller grouped-GEMM alignment (or a capacity factor nearer 1)",
         f"moe/padded_flops_share >= {MOE_PADDED_MIN}", _moe_padding),
    Rule("moe_capacity", "a larger capacity factor (or dropless routing)",
         f"moe/dropped_share >= {MOE_DROPPED_MIN}", _moe_capacity),
)


def evidence_of_run(run: Run, prefix: str) -> Evidence:
    """The newest waterfall line and breakdown of ``run`` (module docstring)."""
    base = metric_key(prefix, "mfu_lost") + "/"
    lines = [r for r in run.metrics if any(k.startswith(base) for k in r)] or run.metrics
    breakdown, step = None, None
    for record in reversed(run.breakdowns):
        breakdown = figures_of_record(record)
        if breakdown is not None:
            step = breakdown.step
            break
    ranks = run.get("ranks")
    return Evidence(prefix=prefix, metrics=lines[-1] if lines else None, breakdown=breakdown,
                    breakdown_step=step, ranks=ranks if isinstance(ranks, int) else None)


def advise(evidence: Evidence, rules: Sequence[Rule] = RULES) -> Tuple[List[Advice], List[Needs]]:
    """The advice (ranked by bound, largest first) and the rules that need
    more input."""
    advice: List[Advice] = []
    needs: List[Needs] = []
    for rule in rules:
        outcome = rule.check(evidence, rule)
        if isinstance(outcome, Advice):
            advice.append(outcome)
        elif isinstance(outcome, Needs):
            needs.append(outcome)
    advice.sort(key=lambda a: -a.bound)
    return advice, needs


def rule_table() -> List[Dict[str, str]]:
    """The rules as rows (name, lever, threshold): the docs' table."""
    return [{"name": r.name, "lever": r.lever, "threshold": r.threshold} for r in RULES]
