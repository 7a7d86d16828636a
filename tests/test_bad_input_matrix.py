"""Bad-input matrix over every public function and constructor
(docs/reliability.md, "Bad input and faults": configuration errors raise a
clear ValueError / TypeError at construction, naming the argument).

Each row: the call, the exception type, and a pattern the message must
match -- the argument's name (and for values, the value). Rows that are not
errors by design (a bad per-step value inside the training loop: one warning
and a missing figure) are in ``DEFINED``, with the defined result checked.

The CLI rows check the exit status 2 and a one-line message naming the
option. The environment rows set ``MFU_TRACKER_PEAK_TFLOPS``.
"""
from __future__ import annotations

import math
import warnings
from typing import Any, Callable

import pytest

torch = pytest.importorskip("torch")

import mfu_tracker  # noqa: E402
from mfu_tracker import (  # noqa: E402
    FlopCounter,
    GenerationCounter,
    RoleRun,
    Roles,
    MFUOptimizerWrapper,
    Tracker,
    compute_mbu,
    compute_mfu,
    counter_backend,
    flash_attn_flops,
    generation_flops,
    generation_utilization,
    get_gpu_spec,
    gpu_spec_table,
    load_preset,
    lookup_gpu_spec,
    measure_peak_flops,
    measured_gpu_spec,
    num_params,
    param_bytes,
    params_flops,
    preset_names,
    profile_flops,
    profile_flops_with_hfu,
    register_flop_formula,
    track,
    transformer_flops,
    unregister_flop_formula,
    user_gpu_spec,
)
from mfu_tracker.cli import main  # noqa: E402
from mfu_tracker.timing import _clock  # noqa: E402

NAN, INF = math.nan, math.inf
DIMS = dict(hidden_size=64, num_layers=2, num_heads=4, vocab_size=100, intermediate_size=128)
LLAMA = {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
         "num_attention_heads": 4, "vocab_size": 100, "intermediate_size": 128}


def _model() -> Any:
    return torch.nn.Linear(4, 4)


def _opt(model: Any) -> Any:
    return torch.optim.SGD(model.parameters(), lr=0.1)


def _wrap(**kwargs: Any) -> Any:
    m = _model()
    return MFUOptimizerWrapper(_opt(m), m, **kwargs)


def _callback(**kwargs: Any) -> Any:
    from mfu_tracker.integrations.hf_trainer import MFUCallback

    return MFUCallback(**kwargs)


# (id, call, exception type, pattern the message must match)
Row = tuple
ROWS: list = [
    # ---- generation and post-training roles ------------------------------------------
    ("generation_flops/prompt_lens=-1", lambda: generation_flops(
        "llama-3.1-8b", prompt_lens=[-1], output_lens=[4]), ValueError, r"prompt_lens"),
    ("generation_flops/output_lens=str", lambda: generation_flops(
        "llama-3.1-8b", prompt_lens=[8], output_lens="x"), TypeError, r"output_lens.*str"),
    ("GenerationCounter/model=int", lambda: GenerationCounter(3), TypeError, r"model.*int"),
    ("generation_utilization/work=int", lambda: generation_utilization(3, peak_tflops=1.0),
     TypeError, r"work must be.*int"),
    ("generation_utilization/prefill_s=-1", lambda: generation_utilization(
        generation_flops("llama-3.1-8b", prompt_lens=[8], output_lens=[4]), prefill_s=-1.0,
        peak_tflops=1.0), ValueError, r"prefill_s.*-1"),
    ("Roles/tracker=int", lambda: Roles(3), TypeError, r"tracker must be.*int"),
    ("RoleRun/name=bogus", lambda: RoleRun("bogus"), ValueError, r"name must be one of.*bogus"),
    # ---- track() ----------------------------------------------------------------
    ("track/flop_count=-1", lambda: track(-1.0), ValueError, r"flop_count.*-1"),
    ("track/flop_count=nan", lambda: track(NAN), ValueError, r"flop_count.*nan"),
    ("track/flop_count=inf", lambda: track(INF), ValueError, r"flop_count.*inf"),
    ("track/flop_count=True", lambda: track(True), TypeError, r"flop_count.*bool"),
    ("track/flop_count=str", lambda: track("1e9"), TypeError, r"flop_count.*str"),
    ("track/flop_count=None", lambda: track(None), TypeError, r"flop_count"),
    ("track/flop_count=0", lambda: track(0), ValueError, r"flop_count.*> 0, got 0.*MFU 0"),
    ("track/param_bytes=-1", lambda: track(1.0, -1), ValueError, r"param_bytes.*-1"),
    ("track/param_bytes=0", lambda: track(1.0, 0), ValueError, r"param_bytes.*> 0 or None, got 0"),
    ("track/hfu_flop_count=nan", lambda: track(1.0, hfu_flop_count=NAN), ValueError, r"hfu_flop_count"),
    ("track/num_tokens=-1", lambda: track(1.0, num_tokens=-1), ValueError, r"num_tokens.*-1"),
    ("track/num_tokens=inf", lambda: track(1.0, num_tokens=INF), ValueError, r"num_tokens.*inf"),
    ("track/dtype=bf17", lambda: track(1.0, dtype="bf17"), ValueError, r"dtype.*'bf17'"),
    ("track/dtype=16", lambda: track(1.0, dtype=16), TypeError, r"dtype.*int"),
    ("track/num_gpus=0", lambda: track(1.0, num_gpus=0), ValueError, r"num_gpus.*0"),
    ("track/num_gpus=True", lambda: track(1.0, num_gpus=True), TypeError, r"num_gpus.*bool"),
    ("track/num_gpus=1.0", lambda: track(1.0, num_gpus=1.0), TypeError, r"num_gpus.*float"),
    ("track/peak_tflops=0", lambda: track(1.0, peak_tflops=0), ValueError, r"peak_tflops.*0"),
    ("track/peak_tflops=nan", lambda: track(1.0, peak_tflops=NAN), ValueError, r"peak_tflops.*nan"),
    ("track/peak_tflops=-inf", lambda: track(1.0, peak_tflops=-INF), ValueError, r"peak_tflops.*inf"),
    ("track/peak_tflops=str", lambda: track(1.0, peak_tflops="1"), TypeError, r"peak_tflops.*str"),
    ("track/clock=gpu", lambda: track(1.0, clock="gpu"), ValueError, r"clock.*'gpu'"),
    ("track/clock=1", lambda: track(1.0, clock=1), TypeError, r"clock.*int"),
    ("track/stream=-1", lambda: track(1.0, peak_tflops=1.0, stream=-1), ValueError, r"stream.*-1"),
    ("track/stream=str", lambda: track(1.0, peak_tflops=1.0, stream="s"), TypeError, r"stream.*str"),
    ("track/stream=2**64", lambda: track(1.0, peak_tflops=1.0, stream=2**64), ValueError, r"stream"),
    ("track/device=tpu", lambda: track(1.0, device="tpu"), ValueError, r"device.*'tpu'"),
    ("track/device=object", lambda: track(1.0, device=object()), TypeError, r"device.*object"),
    ("track/spec=str", lambda: track(1.0, spec="H100"), TypeError, r"spec.*str"),
    # ---- Tracker ---------------------------------------------------------------
    ("Tracker/flops_per_step=-1", lambda: Tracker(-1.0), ValueError, r"flops_per_step.*-1"),
    ("Tracker/flops_per_step=nan", lambda: Tracker(NAN), ValueError, r"flops_per_step.*nan"),
    ("Tracker/flops_per_step=True", lambda: Tracker(True), TypeError, r"flops_per_step.*bool"),
    ("Tracker/executed_flops_per_step=inf", lambda: Tracker(1.0, executed_flops_per_step=INF),
     ValueError, r"executed_flops_per_step.*inf"),
    ("Tracker/param_bytes=-1", lambda: Tracker(1.0, param_bytes=-1), ValueError, r"param_bytes.*-1"),
    ("Tracker/flops_per_step=0", lambda: Tracker(0), ValueError, r"flops_per_step.*got 0.*MFU 0"),
    ("Tracker/param_bytes=0", lambda: Tracker(1.0, param_bytes=0), ValueError, r"param_bytes.*got 0.*MBU 0"),
    ("Tracker/window=0", lambda: Tracker(1.0, window=0), ValueError, r"window.*0"),
    ("Tracker/window=2**25", lambda: Tracker(1.0, window=2**25), ValueError, r"window"),
    ("Tracker/window=True", lambda: Tracker(1.0, window=True), TypeError, r"window.*bool"),
    ("Tracker/window=1.5", lambda: Tracker(1.0, window=1.5), TypeError, r"window.*float"),
    ("Tracker/warmup=-1", lambda: Tracker(1.0, warmup=-1), ValueError, r"warmup.*-1"),
    ("Tracker/num_gpus=0", lambda: Tracker(1.0, num_gpus=0), ValueError, r"num_gpus.*0"),
    ("Tracker/dtype=fp7", lambda: Tracker(1.0, dtype="fp7"), ValueError, r"dtype.*'fp7'"),
    ("Tracker/peak_tflops=-1", lambda: Tracker(1.0, peak_tflops=-1), ValueError, r"peak_tflops.*-1"),
    ("Tracker/clock=x", lambda: Tracker(1.0, clock="x"), ValueError, r"clock.*'x'"),
    ("Tracker/stream=-1", lambda: Tracker(1.0, stream=-1), ValueError, r"stream.*-1"),
    ("Tracker/device=tpu", lambda: Tracker(1.0, device="tpu"), ValueError, r"device.*'tpu'"),
    ("Tracker/spec=3", lambda: Tracker(1.0, spec=3), TypeError, r"spec.*int"),
    ("Tracker/tensor_parallel=0", lambda: Tracker(1.0, tensor_parallel=0), ValueError, r"tensor_parallel"),
    ("Tracker/pipeline_parallel=True", lambda: Tracker(1.0, pipeline_parallel=True), TypeError,
     r"pipeline_parallel.*bool"),
    ("Tracker/distributed=yes", lambda: Tracker(1.0, distributed="yes"), TypeError, r"distributed.*str"),
    ("Tracker/distributed=True without a group", lambda: Tracker(1.0, distributed=True), ValueError,
     r"distributed=True.*init_process_group"),
    ("Tracker/distributed_timeout=0", lambda: Tracker(1.0, distributed_timeout=0), ValueError,
     r"distributed_timeout.*0"),
    ("Tracker/distributed_timeout=nan", lambda: Tracker(1.0, distributed_timeout=NAN), ValueError,
     r"distributed_timeout.*nan"),
    ("Tracker.metrics/prefix=3", lambda: Tracker(1.0, peak_tflops=1.0, device="cpu").metrics(3),
     TypeError, r"prefix.*int"),
    ("Tracker.step/two positionals", lambda: Tracker(1.0, peak_tflops=1.0, device="cpu").step(1, 2),
     TypeError, r"step\(\).*positional"),
    ("Tracker.step/unknown keyword", lambda: Tracker(1.0, peak_tflops=1.0, device="cpu").step(tokens=1),
     TypeError, r"'tokens'"),
    # ---- Tracker phases (docs/waterfall.md) ---------------------------------------
    ("Tracker.phase/name=dataloading", lambda: Tracker(1.0, clock="cpu").phase("dataloading"),
     ValueError, r"phase.*'dataloading'"),
    ("Tracker.begin_phase/name=None", lambda: Tracker(1.0, clock="cpu").begin_phase(None),
     TypeError, r"phase.*NoneType"),
    ("Tracker.switch_phase/name=Data", lambda: Tracker(1.0, clock="cpu").switch_phase("Data"),
     ValueError, r"phase.*'Data'"),
    ("Tracker.attach_ddp/model=Linear", lambda: Tracker(1.0, clock="cpu").attach_ddp(_model()),
     TypeError, r"model.*DistributedDataParallel.*Linear"),
    ("MFUOptimizerWrapper/phases=yes", lambda: _wrap(phases="yes"), TypeError, r"phases.*str"),
    ("MFUCallback/phases=1", lambda: _callback(phases=1), TypeError, r"phases.*int"),
    # ---- compute_mfu / compute_mbu ----------------------------------------------
    ("compute_mfu/flop_count=-1", lambda: compute_mfu(-1, 1.0, peak_tflops=1), ValueError, r"flops.*-1"),
    ("compute_mfu/elapsed_sec=0", lambda: compute_mfu(1, 0, peak_tflops=1), ValueError, r"elapsed_sec.*0"),
    ("compute_mfu/elapsed_sec=-1", lambda: compute_mfu(1, -1, peak_tflops=1), ValueError, r"elapsed_sec.*-1"),
    ("compute_mfu/elapsed_sec=nan", lambda: compute_mfu(1, NAN, peak_tflops=1), ValueError, r"elapsed_sec.*nan"),
    ("compute_mfu/elapsed_sec=str", lambda: compute_mfu(1, "1", peak_tflops=1), TypeError, r"elapsed_sec.*str"),
    ("compute_mfu/num_gpus=0", lambda: compute_mfu(1, 1, peak_tflops=1, num_gpus=0), ValueError, r"num_gpus.*0"),
    ("compute_mfu/dtype=x", lambda: compute_mfu(1, 1, dtype="x", peak_tflops=1), ValueError, r"dtype.*'x'"),
    ("compute_mfu/peak_tflops=0", lambda: compute_mfu(1, 1, peak_tflops=0), ValueError, r"peak_tflops.*0"),
    ("compute_mfu/spec=str", lambda: compute_mfu(1, 1, spec="x"), TypeError, r"spec.*str"),
    ("compute_mfu/fp8 on an A100", lambda: compute_mfu(1, 1, dtype="fp8", spec=lookup_gpu_spec("A100 SXM 80GB")),
     ValueError, r"dtype.*fp8"),
    ("compute_mbu/param_bytes=-1", lambda: compute_mbu(-1, 1.0), ValueError, r"param_bytes.*-1"),
    ("compute_mbu/elapsed_sec=-1", lambda: compute_mbu(1, -1.0), ValueError, r"elapsed_sec.*-1"),
    ("compute_mbu/spec=str", lambda: compute_mbu(1, 1.0, spec="x"), TypeError, r"spec.*str"),
    ("compute_mbu/num_gpus=True", lambda: compute_mbu(1, 1.0, num_gpus=True), TypeError, r"num_gpus.*bool"),
    # ---- transformer_flops ---------------------------------------------------------
    ("transformer_flops/hidden_size=-1", lambda: transformer_flops(**{**DIMS, "hidden_size": -1}, seq_len=4),
     ValueError, r"hidden_size"),
    ("transformer_flops/hidden_size=True", lambda: transformer_flops(**{**DIMS, "hidden_size": True}, seq_len=4),
     TypeError, r"hidden_size.*bool"),
    ("transformer_flops/num_layers=2.0", lambda: transformer_flops(**{**DIMS, "num_layers": 2.0}, seq_len=4),
     TypeError, r"num_layers.*float"),
    ("transformer_flops/num_heads=3 (does not divide)",
     lambda: transformer_flops(**{**DIMS, "num_heads": 3}, seq_len=4), ValueError, r"num_heads"),
    ("transformer_flops/seq_len=0", lambda: transformer_flops(**DIMS, seq_len=0), ValueError, r"seq_len.*0"),
    ("transformer_flops/seq_len=True", lambda: transformer_flops(**DIMS, seq_len=True), TypeError, r"seq_len.*bool"),
    ("transformer_flops/batch_size=0", lambda: transformer_flops(**DIMS, seq_len=4, batch_size=0), ValueError,
     r"batch_size.*0"),
    ("transformer_flops/formula=7n", lambda: transformer_flops(**DIMS, seq_len=4, formula="7n"), ValueError,
     r"formula.*'7n'"),
    ("transformer_flops/causal_attention=quarter",
     lambda: transformer_flops(**DIMS, seq_len=4, causal_attention="quarter"), ValueError, r"causal_attention"),
    ("transformer_flops/mlp=relu", lambda: transformer_flops(**DIMS, seq_len=4, mlp="relu"), ValueError,
     r"mlp.*'relu'"),
    ("transformer_flops/unknown keyword", lambda: transformer_flops(**DIMS, seq_len=4, hiden=3), TypeError,
     r"hiden"),
    ("transformer_flops/missing dims", lambda: transformer_flops(hidden_size=64, seq_len=4), TypeError,
     r"num_layers"),
    ("transformer_flops/no sequence source", lambda: transformer_flops(**DIMS), TypeError, r"seq_len"),
    ("transformer_flops/two sequence sources", lambda: transformer_flops(**DIMS, seq_len=4, seq_lens=[4]),
     TypeError, r"seq_len.*seq_lens"),
    ("transformer_flops/seq_lens=[3,-1]", lambda: transformer_flops(**DIMS, seq_lens=[3, -1]), ValueError,
     r"seq_lens"),
    ("transformer_flops/seq_lens=[3.5]", lambda: transformer_flops(**DIMS, seq_lens=[3.5]), TypeError,
     r"seq_lens.*3.5"),
    ("transformer_flops/cu_seqlens decreasing", lambda: transformer_flops(**DIMS, cu_seqlens=[0, 5, 3]),
     ValueError, r"cu_seqlens"),
    ("transformer_flops/attention_mask=2", lambda: transformer_flops(**DIMS, attention_mask=[[1, 2]]),
     ValueError, r"attention_mask"),
    ("transformer_flops/lora_rank=0", lambda: transformer_flops(**DIMS, seq_len=4, lora_rank=0), ValueError,
     r"lora_rank.*0"),
    ("transformer_flops/lora_targets without rank",
     lambda: transformer_flops(**DIMS, seq_len=4, lora_targets=["q_proj"]), TypeError, r"lora_targets"),
    ("transformer_flops/include_lm_head=1", lambda: transformer_flops(**DIMS, seq_len=4, include_lm_head=1),
     TypeError, r"include_lm_head.*int"),
    ("transformer_flops/config.hidden_size=-5", lambda: transformer_flops({**LLAMA, "hidden_size": -5}, seq_len=4),
     ValueError, r"config\.hidden_size.*-5"),
    ("transformer_flops/config.hidden_size='64'", lambda: transformer_flops({**LLAMA, "hidden_size": "64"},
                                                                           seq_len=4),
     TypeError, r"config\.hidden_size.*str"),
    ("transformer_flops/config.hidden_size=nan", lambda: transformer_flops({**LLAMA, "hidden_size": NAN},
                                                                          seq_len=4),
     TypeError, r"config\.hidden_size"),
    ("transformer_flops/config without model_type", lambda: transformer_flops({"hidden_size": 64}, seq_len=4),
     ValueError, r"config\.model_type"),
    # a type transformers does not know (one it knows is counted exactly)
    ("transformer_flops/config.model_type=no_such_model",
     lambda: transformer_flops({**LLAMA, "model_type": "no_such_model"}, seq_len=4),
     ValueError, r"model_type 'no_such_model'.*transformers refuses"),
    ("transformer_flops/image_grid_thw row of 2",
     lambda: transformer_flops(load_preset("qwen2.5-vl-7b"), seq_len=64, image_grid_thw=[[1, 4]]),
     ValueError, r"image_grid_thw"),
    ("transformer_flops/image_grid_thw odd side",
     lambda: transformer_flops(load_preset("qwen2.5-vl-7b"), seq_len=64, image_grid_thw=[[1, 3, 4]]),
     ValueError, r"image_grid_thw.*spatial_merge_size"),
    ("transformer_flops/video_grid_thw t=0",
     lambda: transformer_flops(load_preset("qwen2.5-vl-7b"), seq_len=64, video_grid_thw=[[0, 4, 4]]),
     ValueError, r"video_grid_thw"),
    ("transformer_flops/LoRA on a VLM batch with images",
     lambda: transformer_flops(load_preset("qwen2.5-vl-7b"), seq_len=64, image_grid_thw=[[1, 4, 4]],
                               lora_rank=8), ValueError, r"lora_rank"),
    ("transformer_flops/config.num_local_experts=-4",
     lambda: transformer_flops({**LLAMA, "model_type": "qwen3_moe", "num_local_experts": -4,
                                "num_experts_per_tok": 2, "moe_intermediate_size": 8}, seq_len=4),
     ValueError, r"config\.num_local_experts"),
    # ---- flash_attn_flops / param_bytes -----------------------------------------
    ("flash_attn_flops/batch_size=-1", lambda: flash_attn_flops(batch_size=-1, seq_len=4, num_heads=2, head_dim=8),
     ValueError, r"batch_size.*-1"),
    ("flash_attn_flops/seq_len=nan", lambda: flash_attn_flops(batch_size=1, seq_len=NAN, num_heads=2, head_dim=8),
     TypeError, r"seq_len.*float"),
    ("flash_attn_flops/num_heads=0", lambda: flash_attn_flops(batch_size=1, seq_len=4, num_heads=0, head_dim=8),
     ValueError, r"num_heads.*0"),
    ("flash_attn_flops/head_dim=True", lambda: flash_attn_flops(batch_size=1, seq_len=4, num_heads=2,
                                                                head_dim=True),
     TypeError, r"head_dim.*bool"),
    ("flash_attn_flops/causal=yes", lambda: flash_attn_flops(batch_size=1, seq_len=4, num_heads=2, head_dim=8,
                                                             causal="yes"),
     TypeError, r"causal.*str"),
    ("flash_attn_flops/overflow", lambda: flash_attn_flops(batch_size=2**40, seq_len=2**40, num_heads=2,
                                                           head_dim=8),
     OverflowError, r"does not fit"),
    ("flash_attn_flops/missing batch", lambda: flash_attn_flops(seq_len=4, num_heads=2, head_dim=8), TypeError,
     r"batch_size"),
    ("flash_attn_flops/batch and batch_size", lambda: flash_attn_flops(1, 4, 2, 8, batch_size=1), TypeError,
     r"batch.*batch_size"),
    ("param_bytes/model=str", lambda: param_bytes("model"), TypeError, r"model.*str"),
    ("param_bytes/trainable_only=yes", lambda: param_bytes(_model(), trainable_only="yes"), TypeError,
     r"trainable_only.*str"),
    ("param_bytes/model without parameters", lambda: param_bytes(torch.nn.ReLU()), ValueError,
     r"model has no parameters.*MBU 0"),
    ("num_params/model=str", lambda: num_params("model"), TypeError, r"model.*str"),
    ("num_params/model without parameters", lambda: num_params(torch.nn.Sequential()), ValueError,
     r"model has no parameters"),
    ("num_params/trainable_only=1", lambda: num_params(_model(), trainable_only=1), TypeError,
     r"trainable_only.*int"),
    ("params_flops/num_params=-1", lambda: params_flops(-1), ValueError, r"num_params.*-1"),
    ("params_flops/num_params=nan", lambda: params_flops(NAN), ValueError, r"num_params.*nan"),
    ("params_flops/num_params=str", lambda: params_flops("7e9"), TypeError, r"num_params.*str"),
    ("params_flops/num_tokens=0", lambda: params_flops(1e9, num_tokens=0), ValueError, r"num_tokens.*0"),
    ("params_flops/lora=1", lambda: params_flops(1e9, lora=1), TypeError, r"lora.*int"),
    ("load_preset/name=3", lambda: load_preset(3), TypeError, r"name.*int"),
    ("load_preset/unknown", lambda: load_preset("llama-9"), KeyError, r"'llama-9'.*available"),
    # ---- GPU specs -----------------------------------------------------------------
    ("lookup_gpu_spec/name=5", lambda: lookup_gpu_spec(5), TypeError, r"name.*int"),
    ("lookup_gpu_spec/name=''", lambda: lookup_gpu_spec(""), ValueError, r"name"),
    ("lookup_gpu_spec/name with NUL", lambda: lookup_gpu_spec("H100\x00x"), ValueError, r"name.*NUL"),
    ("lookup_gpu_spec/num_sms=-1", lambda: lookup_gpu_spec("H100", num_sms=-1), ValueError, r"num_sms.*-1"),
    ("lookup_gpu_spec/num_sms=2**70", lambda: lookup_gpu_spec("H100", num_sms=2**70), ValueError, r"num_sms"),
    ("lookup_gpu_spec/num_sms=True", lambda: lookup_gpu_spec("H100", num_sms=True), TypeError, r"num_sms.*bool"),
    ("lookup_gpu_spec/compute_capability=(9,)", lambda: lookup_gpu_spec("H100", compute_capability=(9,)),
     TypeError, r"compute_capability"),
    ("lookup_gpu_spec/total_memory_bytes=-1", lambda: lookup_gpu_spec("H100", total_memory_bytes=-1),
     ValueError, r"total_memory_bytes"),
    ("get_gpu_spec/device=object", lambda: get_gpu_spec(object()), TypeError, r"device.*object"),
    ("get_gpu_spec/device=tpu:0", lambda: get_gpu_spec("tpu:0"), ValueError, r"device.*'tpu:0'"),
    ("get_gpu_spec/device=-1", lambda: get_gpu_spec(-1), ValueError, r"device.*-1"),
    ("get_gpu_spec/device=True", lambda: get_gpu_spec(True), TypeError, r"device.*bool"),
    ("user_gpu_spec/peak_tflops=-1", lambda: user_gpu_spec(-1), ValueError, r"peak_tflops.*-1"),
    ("user_gpu_spec/peak_tflops=nan", lambda: user_gpu_spec(NAN), ValueError, r"peak_tflops.*nan"),
    ("user_gpu_spec/peak_tflops=True", lambda: user_gpu_spec(True), TypeError, r"peak_tflops.*bool"),
    ("user_gpu_spec/peak_tflops={fp7: 1}", lambda: user_gpu_spec({"fp7": 1}), ValueError, r"peak_tflops.*'fp7'"),
    ("user_gpu_spec/peak_tflops={bf16: 0}", lambda: user_gpu_spec({"bf16": 0}), ValueError,
     r"peak_tflops\['bf16'\].*0"),
    ("user_gpu_spec/peak_tflops={}", lambda: user_gpu_spec({}), ValueError, r"peak_tflops.*empty"),
    ("user_gpu_spec/memory_bandwidth_tbs=-1", lambda: user_gpu_spec(1, memory_bandwidth_tbs=-1), ValueError,
     r"memory_bandwidth_tbs.*-1"),
    ("user_gpu_spec/name=3", lambda: user_gpu_spec(1, name=3), TypeError, r"name.*int"),
    ("measure_peak_flops/dtype=fp8", lambda: measure_peak_flops("fp8"), ValueError, r"dtype.*fp8"),
    ("measure_peak_flops/dtype=x", lambda: measure_peak_flops("x"), ValueError, r"dtype.*'x'"),
    ("measure_peak_flops/tf32 on cpu", lambda: measure_peak_flops("tf32"), ValueError, r"dtype.*tf32"),
    ("measure_peak_flops/duration_s=0", lambda: measure_peak_flops(duration_s=0), ValueError, r"duration_s.*0"),
    ("measure_peak_flops/duration_s=nan", lambda: measure_peak_flops(duration_s=NAN), ValueError,
     r"duration_s.*nan"),
    ("measure_peak_flops/duration_s=61", lambda: measure_peak_flops(duration_s=61), ValueError, r"duration_s.*61"),
    ("measure_peak_flops/device=tpu", lambda: measure_peak_flops(device="tpu"), ValueError, r"device.*'tpu'"),
    ("measure_peak_flops/device=3.5", lambda: measure_peak_flops(device=3.5), TypeError, r"device.*float"),
    ("measured_gpu_spec/dtype=int8", lambda: measured_gpu_spec("int8"), ValueError, r"dtype.*int8"),
    ("measured_gpu_spec/device=[1]", lambda: measured_gpu_spec(device=[1]), TypeError, r"device.*list"),
    # ---- FlopCounter / profile_flops / register_flop_formula ------------------------
    ("FlopCounter/causal_attention=quarter", lambda: FlopCounter(causal_attention="quarter"), ValueError,
     r"causal_attention.*'quarter'"),
    ("FlopCounter/causal_attention=1", lambda: FlopCounter(causal_attention=1), TypeError,
     r"causal_attention.*int"),
    ("FlopCounter/modules=1", lambda: FlopCounter(modules=1), TypeError, r"modules.*int"),
    ("FlopCounter/audit=yes", lambda: FlopCounter(audit="yes"), TypeError, r"audit.*str"),
    ("profile_flops/model=str", lambda: profile_flops("m", torch.ones(4)), TypeError, r"model.*str"),
    ("profile_flops/args=3", lambda: profile_flops(_model(), 3), TypeError, r"args.*int"),
    ("profile_flops/kwargs=[1]", lambda: profile_flops(_model(), kwargs=[1]), TypeError, r"kwargs.*list"),
    ("profile_flops/with_backward=y", lambda: profile_flops(_model(), torch.ones(4), with_backward="y"),
     TypeError, r"with_backward.*str"),
    ("profile_flops/causal_attention=x", lambda: profile_flops(_model(), torch.ones(4), causal_attention="x"),
     ValueError, r"causal_attention.*'x'"),
    ("profile_flops/device=tpu", lambda: profile_flops(_model(), torch.ones(4), device="tpu"), ValueError,
     r"device.*'tpu'"),
    ("profile_flops_with_hfu/model=None", lambda: profile_flops_with_hfu(None), TypeError, r"model.*NoneType"),
    ("profile_flops_with_hfu/args=object", lambda: profile_flops_with_hfu(_model(), object()), TypeError,
     r"args.*object"),
    ("register_flop_formula/op_name=noscope", lambda: register_flop_formula("noscope", lambda *a: 1),
     ValueError, r"op_name.*'noscope'"),
    ("register_flop_formula/op_name=3", lambda: register_flop_formula(3, lambda *a: 1), TypeError,
     r"op_name.*3"),
    ("register_flop_formula/fn=3", lambda: register_flop_formula("mylib::op_bad_fn", 3), TypeError, r"fn.*int"),
    ("register_flop_formula/built-in op", lambda: register_flop_formula("aten::mm", lambda *a: 1), ValueError,
     r"aten::mm.*built-in"),
    ("unregister_flop_formula/op_name=3", lambda: unregister_flop_formula(3), TypeError, r"op_name.*3"),
    ("unregister_flop_formula/not registered", lambda: unregister_flop_formula("mylib::never_registered"),
     KeyError, r"mylib::never_registered"),
    # ---- MFUOptimizerWrapper ----------------------------------------------------------
    ("MFUOptimizerWrapper/optimizer=str", lambda: MFUOptimizerWrapper("opt", _model()), TypeError,
     r"optimizer.*str"),
    ("MFUOptimizerWrapper/model=str", lambda: MFUOptimizerWrapper(_opt(_model()), "m"), TypeError, r"model.*str"),
    ("MFUOptimizerWrapper/model without parameters",
     lambda: MFUOptimizerWrapper(_opt(_model()), torch.nn.ReLU()), ValueError, r"model has no parameters"),
    ("MFUOptimizerWrapper/wrapped twice", lambda: MFUOptimizerWrapper(_wrap(peak_tflops=1.0), _model()),
     TypeError, r"optimizer.*already"),
    ("MFUOptimizerWrapper/dtype=x", lambda: _wrap(dtype="x"), ValueError, r"dtype.*'x'"),
    ("MFUOptimizerWrapper/num_gpus=0", lambda: _wrap(num_gpus=0), ValueError, r"num_gpus.*0"),
    ("MFUOptimizerWrapper/num_gpus=1.5", lambda: _wrap(num_gpus=1.5), TypeError, r"num_gpus.*float"),
    ("MFUOptimizerWrapper/hfu_backward_factor=-1", lambda: _wrap(hfu_backward_factor=-1), ValueError,
     r"hfu_backward_factor.*-1"),
    ("MFUOptimizerWrapper/backward_factor=0.5", lambda: _wrap(backward_factor=0.5), ValueError,
     r"backward_factor.*0.5"),
    ("MFUOptimizerWrapper/both factors", lambda: _wrap(backward_factor=3.0, hfu_backward_factor=2.0), ValueError,
     r"hfu_backward_factor or backward_factor"),
    ("MFUOptimizerWrapper/count_every=-1", lambda: _wrap(count_every=-1), ValueError, r"count_every.*-1"),
    ("MFUOptimizerWrapper/gradient_accumulation_steps=0", lambda: _wrap(gradient_accumulation_steps=0),
     ValueError, r"gradient_accumulation_steps.*0"),
    ("MFUOptimizerWrapper/window=0", lambda: _wrap(window=0), ValueError, r"window.*0"),
    ("MFUOptimizerWrapper/warmup=-1", lambda: _wrap(warmup=-1), ValueError, r"warmup.*-1"),
    ("MFUOptimizerWrapper/causal_attention=[full]", lambda: _wrap(causal_attention=["full"]), ValueError,
     r"causal_attention"),
    ("MFUOptimizerWrapper/peak_tflops=nan", lambda: _wrap(peak_tflops=NAN), ValueError, r"peak_tflops.*nan"),
    ("MFUOptimizerWrapper/clock=x", lambda: _wrap(clock="x"), ValueError, r"clock.*'x'"),
    ("MFUOptimizerWrapper/sample_batch=3", lambda: _wrap(sample_batch=3), TypeError, r"sample_batch.*int"),
    ("MFUOptimizerWrapper/spec=str", lambda: _wrap(spec="H100"), TypeError, r"spec.*str"),
    ("MFUOptimizerWrapper/device=tpu", lambda: _wrap(device="tpu"), ValueError, r"device.*'tpu'"),
    ("MFUOptimizerWrapper.track_step/num_tokens=-1", lambda: _wrap(peak_tflops=1.0).track_step(-1).__enter__(),
     ValueError, r"num_tokens.*-1"),
    # ---- MFUCallback ----------------------------------------------------------------------
    ("MFUCallback/sample_batch=3", lambda: _callback(sample_batch=3), TypeError, r"sample_batch.*int"),
    ("MFUCallback/dtype=x", lambda: _callback(dtype="x"), ValueError, r"dtype.*'x'"),
    ("MFUCallback/num_gpus=0", lambda: _callback(num_gpus=0), ValueError, r"num_gpus.*0"),
    ("MFUCallback/num_gpus=True", lambda: _callback(num_gpus=True), TypeError, r"num_gpus.*bool"),
    ("MFUCallback/hfu_backward_factor=nan", lambda: _callback(hfu_backward_factor=NAN), ValueError,
     r"hfu_backward_factor.*nan"),
    ("MFUCallback/backward_factor=0", lambda: _callback(backward_factor=0), ValueError, r"backward_factor.*0"),
    ("MFUCallback/metric_prefix=3", lambda: _callback(metric_prefix=3), TypeError, r"metric_prefix.*int"),
    ("MFUCallback/peak_tflops=0", lambda: _callback(peak_tflops=0), ValueError, r"peak_tflops.*0"),
    ("MFUCallback/spec=3", lambda: _callback(spec=3), TypeError, r"spec.*int"),
    ("MFUCallback/count_every=-1", lambda: _callback(count_every=-1), ValueError, r"count_every.*-1"),
    ("MFUCallback/window=0", lambda: _callback(window=0), ValueError, r"window.*0"),
    ("MFUCallback/warmup=-1", lambda: _callback(warmup=-1), ValueError, r"warmup.*-1"),
    ("MFUCallback/causal_attention=x", lambda: _callback(causal_attention="x"), ValueError,
     r"causal_attention.*'x'"),
    ("MFUCallback/clock=x", lambda: _callback(clock="x"), ValueError, r"clock.*'x'"),
    ("MFUCallback/device=object", lambda: _callback(device=object()), TypeError, r"device.*object"),
    ("MFUCallback/device=tpu", lambda: _callback(device="tpu"), ValueError, r"device.*'tpu'"),
]


@pytest.mark.parametrize("name, call, exc, pattern", ROWS, ids=[r[0] for r in ROWS])
def test_bad_input_raises_a_specific_error_naming_the_argument(name, call, exc, pattern):
    _clock.reset_caches()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "no datasheet peak for a cpu device"
        with pytest.raises(exc, match=pattern) as info:
            call()
    assert type(info.value) is not Exception
    message = str(info.value)
    assert len(message) < 600 and "\n" not in message, message  # one readable line
    assert "%" not in message.replace("% model", ""), message  # no unformatted printf


def test_the_matrix_covers_every_public_callable():
    """Every public function / class exported (``__all__`` and the Trainer
    callback) has at least one row; data-only classes are listed here."""
    data_only = {"__version__", "FlopProfile", "DistributedFigures", "RankFigures", "UtilizationResult",
                 "TransformerFlops", "GPUSpec", "ModuleFlops", "UncountedOp", "PEAK_ENV_VAR",
                 "PeakMeasurementError",  # an exception class: raised, not called
                 "GenerationCount", "GenerationFlops", "GenerationUtilization"}  # results
    covered = {row[0].split("/")[0].split(".")[0] for row in ROWS}
    covered |= {d[0].split("/")[0].split(".")[0] for d in DEFINED}
    covered |= {"main"}  # the CLI rows below
    wanted = (set(mfu_tracker.__all__) - data_only) | {"MFUCallback", "main"}
    assert wanted <= covered, sorted(wanted - covered)


# ---- defined results, not errors ---------------------------------------------------


def _step_warns(value: Any, argument: str) -> Callable[[], None]:
    def run() -> None:
        tracker = Tracker(1.0, peak_tflops=1.0, device="cpu", clock="cpu", warmup=0)
        tracker.step()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            tracker.step(**{argument: value})  # never raises into the loop
            tracker.step(**{argument: value})
        messages = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
        assert len(messages) == 1 and argument in messages[0], messages  # one warning, naming it
        s = tracker.summary()
        assert s["boundaries"] == 3 and s["steps"] == 2  # the steps are counted ...
        figure = {"num_tokens": "tokens_per_sec", "model_flops": "mfu", "executed_flops": "hfu"}[argument]
        assert s[figure] is None  # ... and the figure needing the bad value is left out
    return run


def _defined_unknown_peak() -> None:
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        assert compute_mfu(1e12, 1.0, device="cpu") is None  # no peak: None, never a guess
        assert compute_mbu(1e9, 1.0, device="cpu") is None


def _defined_mfu_above_one() -> None:
    assert compute_mfu(1e15, 1.0, peak_tflops=1.0) == pytest.approx(1000.0)  # never clamped


def _defined_lookup_unknown() -> None:
    with pytest.warns(UserWarning, match="no datasheet peak"):
        assert lookup_gpu_spec("Quantum Banana 9000 xyz") is None


def _defined_flash_zero() -> None:
    assert flash_attn_flops(batch_size=0, seq_len=0, num_heads=1, head_dim=1) == 0


def _defined_no_arguments() -> None:
    # Functions without arguments: nothing to get wrong but their results.
    assert counter_backend() in ("torch-ext", "dispatch")
    names = [spec.name for spec in gpu_spec_table()]
    assert names and len(names) == len(set(names))
    assert preset_names() == sorted(preset_names()) and "llama-3.1-8b" in preset_names()
    # outside `mfu-tracker run` there is no agent: end_step() does nothing, and says nothing
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert mfu_tracker.end_step() is None


def _defined_transformer_huge() -> None:
    # The analytic path is double arithmetic (like the peaks): dimensions far
    # beyond any model give finite, ordered figures, not a wrapped integer.
    r = transformer_flops(hidden_size=2**60, num_layers=2**20, num_heads=1, vocab_size=2**40,
                          intermediate_size=2**60, seq_len=2**62, batch_size=2**62)
    assert math.isfinite(r.model_flops) and r.model_flops > 1e80
    assert r.hardware_flops >= r.model_flops >= r.forward_flops >= r.attention_flops > 0


DEFINED = [
    ("transformer_flops/huge dimensions", _defined_transformer_huge),
    ("Tracker.step/num_tokens=-1", _step_warns(-1, "num_tokens")),
    ("Tracker.step/num_tokens=nan", _step_warns(NAN, "num_tokens")),
    ("Tracker.step/num_tokens=str", _step_warns("5", "num_tokens")),
    ("Tracker.step/num_tokens=tensor", _step_warns(torch.tensor(5), "num_tokens")),
    ("Tracker.step/model_flops=inf", _step_warns(INF, "model_flops")),
    ("Tracker.step/executed_flops=True", _step_warns(True, "executed_flops")),
    ("compute_mfu/no peak for the device", _defined_unknown_peak),
    ("compute_mfu/MFU > 1", _defined_mfu_above_one),
    ("lookup_gpu_spec/unknown device", _defined_lookup_unknown),
    ("flash_attn_flops/empty batch", _defined_flash_zero),
    ("counter_backend/no arguments", _defined_no_arguments),
    ("end_step/outside mfu-tracker run", _defined_no_arguments),
    ("gpu_spec_table/no arguments", _defined_no_arguments),
    ("preset_names/no arguments", _defined_no_arguments),
]


@pytest.mark.parametrize("name, check", DEFINED, ids=[d[0] for d in DEFINED])
def test_defined_results(name, check):
    _clock.reset_caches()
    check()


# ---- MFU_TRACKER_PEAK_TFLOPS ------------------------------------------------------------

BAD_OVERRIDES = ["abc", "-5", "0", "nan", "inf", "1e400", "bf16=", "bf16=1,bf16=2", "fp7=3",
                 "bf16=1;fp16=2", "bf16=1,", "1 2", "bf16=-1"]
OVERRIDE_USERS = {
    "get_gpu_spec": lambda: get_gpu_spec("cpu"),
    "track": lambda: track(1.0, device="cpu"),
    "Tracker": lambda: Tracker(1.0, device="cpu"),
    "compute_mfu": lambda: compute_mfu(1.0, 1.0, device="cpu"),
}


@pytest.mark.parametrize("user", sorted(OVERRIDE_USERS))
@pytest.mark.parametrize("text", BAD_OVERRIDES)
def test_malformed_peak_override_names_the_variable_and_its_value(text, user, monkeypatch):
    monkeypatch.setenv("MFU_TRACKER_PEAK_TFLOPS", text)
    _clock.reset_caches()
    with pytest.raises(ValueError, match="MFU_TRACKER_PEAK_TFLOPS") as info:
        OVERRIDE_USERS[user]()
    message = str(info.value)
    assert repr(text) in message, message  # the value as given
    assert "%" not in message, message
    _clock.reset_caches()


@pytest.mark.parametrize("text, dtype, tflops", [("123.5", "bf16", 123.5), ("bf16=100,fp8=200", "fp8", 200.0),
                                                 ("  ", "bf16", None)])
def test_wellformed_peak_override_is_used(text, dtype, tflops, monkeypatch):
    monkeypatch.setenv("MFU_TRACKER_PEAK_TFLOPS", text)
    _clock.reset_caches()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        spec = get_gpu_spec("cpu")
    assert (spec.peak_tflops(dtype) if spec.has_peak(dtype) else None) == (
        pytest.approx(tflops) if tflops else None)
    _clock.reset_caches()


# ---- the CLI ---------------------------------------------------------------------------

CLI = [
    (["estimate", "--params=-7e9", "--gpu", "H100 SXM", "--tokens-per-sec", "1"], "--params"),
    (["estimate", "--model", "qwen2.5-vl-7b", "--seq-len", "64", "--gpu", "H100 SXM",
      "--tokens-per-sec", "1", "--image-grid", "1,4"], "--image-grid"),
    (["estimate", "--params", "7e9", "--gpu", "H100 SXM", "--tokens-per-sec", "1",
      "--image-grid", "1,4,4"], "--image-grid"),
    (["estimate", "--params", "nan", "--gpu", "H100 SXM", "--tokens-per-sec", "1"], "--params"),
    (["estimate", "--params", "7e9", "--gpu", "H100 SXM", "--tokens-per-sec", "nan"], "--tokens-per-sec"),
    (["estimate", "--params", "7e9", "--gpu", "H100 SXM", "--tokens-per-sec", "-1"], "--tokens-per-sec"),
    (["estimate", "--params", "7e9", "--gpu", "H100 SXM", "--tokens-per-sec", "abc"], "--tokens-per-sec"),
    (["estimate", "--params", "7e9", "--gpu", "NoSuch", "--tokens-per-sec", "1"], "--gpu"),
    (["estimate", "--params", "7e9", "--gpu", "H100 SXM", "--tokens-per-sec", "1", "--dtype", "fp7"], "--dtype"),
    (["estimate", "--params", "7e9", "--gpu", "A100 SXM 80GB", "--tokens-per-sec", "1", "--dtype", "fp8"], "fp8"),
    (["estimate", "--params", "7e9", "--gpu", "H100 SXM", "--tokens-per-sec", "1", "--num-gpus", "0"],
     "--num-gpus"),
    (["estimate", "--params", "7e9", "--peak-tflops", "0", "--tokens-per-sec", "1"], "--peak-tflops"),
    (["estimate", "--params", "7e9", "--peak-tflops", "inf", "--tokens-per-sec", "1"], "--peak-tflops"),
    (["estimate", "--params", "7e9", "--tokens-per-sec", "1"], "--peak-tflops"),
    (["estimate", "--model", "no-such-model", "--gpu", "H100 SXM", "--seq-len", "8", "--tokens-per-sec", "1"],
     "no-such-model"),
    (["estimate", "--model", "llama-3.1-8b", "--gpu", "H100 SXM", "--seq-len", "0", "--tokens-per-sec", "1"],
     "--seq-len"),
    (["estimate", "--model", "llama-3.1-8b", "--gpu", "H100 SXM", "--tokens-per-sec", "1"], "--seq-len"),
    (["estimate", "--model", "{bad_json}", "--gpu", "H100 SXM", "--seq-len", "8", "--tokens-per-sec", "1"],
     "JSON"),
    (["estimate", "--model", "{bad_config}", "--gpu", "H100 SXM", "--seq-len", "8", "--tokens-per-sec", "1"],
     "config.hidden_size"),
    (["estimate", "--params", "7e9", "--gpu", "H100 SXM", "--step-time", "0", "--batch-size", "1",
      "--seq-len", "8"], "--step-time"),
    (["estimate", "--params", "7e9", "--gpu", "H100 SXM", "--step-time", "1", "--batch-size", "0",
      "--seq-len", "8"], "--batch-size"),
    (["estimate", "--params", "7e9", "--gpu", "H100 SXM", "--tokens-per-sec", "1", "--step-time", "1"],
     "--step-time"),
    (["profile", "--model", "llama-3.1-8b", "--seq-len", "0"], "--seq-len"),
    (["profile", "--model", "llama-3.1-8b", "--seq-len", "8", "--depth", "0"], "--depth"),
    (["profile", "--model", "no-such-model", "--seq-len", "8"], "no-such-model"),
    (["bogus"], "bogus"),
]


@pytest.mark.parametrize("argv, named", CLI, ids=[" ".join(a[:3]) + f" [{n}]" for a, n in CLI])
def test_cli_bad_input_exits_2_with_one_line_naming_the_option(argv, named, tmp_path, capsys):
    bad_json = tmp_path / "bad.json"
    bad_json.write_text("{not json")
    bad_config = tmp_path / "config.json"
    bad_config.write_text('{"model_type": "llama", "hidden_size": -3, "num_hidden_layers": 2, '
                          '"num_attention_heads": 4, "vocab_size": 100, "intermediate_size": 8}')
    argv = [a.format(bad_json=bad_json, bad_config=bad_config) for a in argv]
    try:
        status = main(argv)
    except SystemExit as exit_:  # argparse's own errors
        status = exit_.code
    assert status == 2
    err = capsys.readouterr().err.strip()
    last = err.splitlines()[-1]
    assert last.startswith("mfu-tracker") and "error:" in last, err
    assert named in last, last
    assert "Traceback" not in err
