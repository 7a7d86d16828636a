"""The agent's two sentences: what it detected (printed once, at the end of
the first step it saw) and, at exit, what it measured or why it measured
nothing (docs/run.md). Each figure says where it came from: given on the
command line, counted, read from the inputs, looked up, measured.
"""
from __future__ import annotations

from typing import Any, Optional

from ..integrations._step_record import read_tokens

#: What a loop without an optimizer adds (docs/run.md, "Where steps cannot be found").
END_STEP_HINT = ("add `import mfu_tracker` and `mfu_tracker.end_step()` after each training "
                 "step (it does nothing without mfu-tracker run)")


def _tokens(agent: Any, record: Any) -> str:
    given = agent.config.tokens_per_step
    if given is not None:
        return f"tokens/step {given:,.0f} (given: --tokens-per-step)"
    source = agent.inputs_source or "no training forward finished in the step"
    # the record holds host values only (ints, CPU mask sums): no device read
    tokens = read_tokens([record])[0][0]
    if tokens is None:
        return f"tokens/step unknown ({source}: tokens/s is left out; give --tokens-per-step)"
    batches = record.micro_batches
    more = f", {batches} micro-batches" if batches > 1 else ""
    return f"tokens/step {tokens:,.0f} ({source}{more})"


def _flops(agent: Any, record: Any) -> str:
    config = agent.config
    if config.flops_per_step is not None:
        return f"FLOPs/step {config.flops_per_step:,.0f} (given: --flops-per-step)"
    counted = record.counted
    if counted is None:
        why = "counting is off: --count-every 0" if config.count_every == 0 else \
            "the FLOP counter did not count it"
        return f"FLOPs/step unknown on the first step ({why}; give --flops-per-step)"
    model, executed = counted.model_flops, counted.executed_flops
    if model is None or executed is None:
        return "FLOPs/step unknown on the first step (the FLOP counter did not count it)"
    return f"FLOPs/step {model:,.0f} model, {executed:,.0f} executed (counted by FlopCounter)"


def _peak(agent: Any) -> str:
    peak = agent._tracker.peak
    if peak.flops_per_sec is None:
        if agent.config.measure_peak:      # measured and refused: the warning above says why
            return (f"peak none (--measure-peak: the machine was too busy to measure "
                    f"{agent.device}'s; MFU is left out; give --peak-tflops)")
        return (f"peak none ({agent.device} has no datasheet peak: MFU is left out; give "
                "--peak-tflops, or --measure-peak)")
    source = {"user": "given: --peak-tflops", "measured": "measured: a GEMM, --measure-peak"}.get(
        peak.source, f"{peak.source}: {peak.spec.name if peak.spec is not None else agent.device}")
    return f"peak {peak.flops_per_sec * 1e-12:.4g} TFLOP/s {peak.dtype} per device ({source})"


def detected_line(agent: Any, record: Any) -> str:
    """``detected: tokens/step ..., dtype ..., FLOPs/step ..., peak ...`` for
    the first step the agent closed (``record``)."""
    parts = [_tokens(agent, record), f"dtype {agent.resolved_dtype} ({agent.dtype_source})",
             _flops(agent, record), _peak(agent)]
    tracker = agent._tracker
    if tracker.distributed:
        world = tracker.distributed_counters()["world_size"]
        parts.append(f"{world} ranks, every one measured (above: rank 0's step; the "
                     "logged figures are global)")
    return "detected: " + ", ".join(parts)


def end_report(agent: Any) -> Optional[str]:
    """The exit line: the steps measured, or why none were (None: this
    process trained nothing -- a launcher, a compile worker)."""
    steps = agent._steps_done
    root = type(agent.root).__name__ if agent.root is not None else None
    if steps == 0 and agent.training_forwards:
        return (f"steps cannot be found: {agent.training_forwards} training forwards of {root} "
                f"ran and no optimizer stepped (a custom update?); {END_STEP_HINT}")
    if steps == 0 and agent.optimizer_steps:
        return (f"steps cannot be found: {agent.optimizer_steps} optimizer steps ran, but no "
                "forward of a module with trainable parameters, in training mode with grad on "
                "(no nn.Module, or one compiled in place: use torch.compile(model)); nothing "
                "was measured")
    if steps == 0:
        return None
    how = "at mfu_tracker.end_step()" if agent._explicit else "at the optimizer's step"
    blind = (f"; {agent.blind_steps} of them with no visible forward (FLOPs and tokens unknown)"
             if agent.blind_steps else "")
    return f"{steps} steps measured (boundaries {how}){blind}; log {agent.config.log_path}"
