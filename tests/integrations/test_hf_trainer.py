"""MFUCallback with a real transformers.Trainer on CPU.

Tiny GPT-2 / Llama built from configs, in-memory datasets, a known peak
(``peak_tflops``) so MFU is defined on the CPU. The logged figures are read
back from each report_to backend's own storage -- TensorBoard event files
(EventAccumulator), an MLflow file store (MlflowClient), a WandB offline run
(its transaction log) -- and compared with:

* FLOPs computed independently: ``transformer_flops(config, formula="matmul")``
  per micro-batch (every matmul's 2·m·n·k, the count an op counter sees), and
* the clock: the window time the callback used (``callback.history``).

No timing asserts: times are whatever the clock said; only the arithmetic
around them is checked.
"""
from __future__ import annotations

import glob
import math
import os
import warnings
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("accelerate")

from transformers import (  # noqa: E402
    GPT2Config,
    GPT2LMHeadModel,
    LlamaConfig,
    LlamaForCausalLM,
    Trainer,
    TrainerCallback,
    TrainerControl,
    TrainingArguments,
)
from transformers.trainer_callback import CallbackHandler  # noqa: E402

from mfu_tracker import transformer_flops, user_gpu_spec  # noqa: E402
from mfu_tracker.integrations.hf_trainer import MFUCallback  # noqa: E402
from mfu_tracker.peaks import _table as gpu_table  # noqa: E402

PEAK_TFLOPS = 0.5          # 5e11 FLOP/s: a made-up CPU peak so MFU is defined
PEAK = PEAK_TFLOPS * 1e12
VOCAB = 64
B, S = 2, 8                # micro-batch: 2 sequences of 8 tokens


def gpt2() -> GPT2LMHeadModel:
    torch.manual_seed(0)
    return GPT2LMHeadModel(GPT2Config(n_embd=32, n_layer=2, n_head=2, vocab_size=VOCAB,
                                      n_positions=64, bos_token_id=0, eos_token_id=0))


def llama() -> LlamaForCausalLM:
    torch.manual_seed(0)
    return LlamaForCausalLM(LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                        num_attention_heads=4, num_key_value_heads=2,
                                        vocab_size=VOCAB, max_position_embeddings=64,
                                        bos_token_id=0, eos_token_id=0, pad_token_id=0))


class Fixed(torch.utils.data.Dataset):
    """n sequences of `length` tokens."""

    def __init__(self, n: int = 64, length: int = S) -> None:
        g = torch.Generator().manual_seed(1)
        self.ids = torch.randint(1, VOCAB, (n, length), generator=g)

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int):
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


class Varying(torch.utils.data.IterableDataset):
    """Batch j holds B sequences of lengths[j] tokens (no shuffling: iterable)."""

    def __init__(self, lengths):
        self.lengths = lengths

    def __iter__(self):
        g = torch.Generator().manual_seed(2)
        for length in self.lengths:
            for _ in range(B):
                ids = torch.randint(1, VOCAB, (length,), generator=g)
                yield {"input_ids": ids, "labels": ids}


class Ragged(torch.utils.data.IterableDataset):
    """Sequences of the given lengths, padded per batch by `pad_collate`."""

    def __init__(self, lengths):
        self.lengths = lengths

    def __iter__(self):
        g = torch.Generator().manual_seed(3)
        for length in self.lengths:
            yield {"input_ids": torch.randint(1, VOCAB, (length,), generator=g)}


def pad_collate(items):
    width = max(len(x["input_ids"]) for x in items)
    ids = torch.zeros(len(items), width, dtype=torch.long)
    mask = torch.zeros(len(items), width, dtype=torch.long)
    for row, item in enumerate(items):
        n = len(item["input_ids"])
        ids[row, :n] = item["input_ids"]
        mask[row, :n] = 1
    labels = ids.masked_fill(mask == 0, -100)
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}


def train(tmp_path, model, dataset, callback, *, report_to=(), collator=None, **overrides):
    kwargs = dict(output_dir=str(tmp_path / "out"), max_steps=4, per_device_train_batch_size=B,
                  logging_steps=2, report_to=list(report_to), use_cpu=True, save_strategy="no",
                  disable_tqdm=True, learning_rate=1e-3, seed=0)
    kwargs.update(overrides)
    args = TrainingArguments(**kwargs)
    trainer = Trainer(model=model, args=args, train_dataset=dataset,
                      callbacks=[callback] if callback is not None else None,
                      data_collator=collator)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the CPU peak lookup's warning; tested on its own
        trainer.train()
    return trainer


def matmul_flops(model, *, batch=B, seq=S, seq_lens=None):
    """Independent count: transformer_flops(formula="matmul") of one micro-batch."""
    if seq_lens is not None:
        return transformer_flops(model.config, seq_lens=seq_lens, formula="matmul").model_flops
    return transformer_flops(model.config, seq_len=seq, batch_size=batch, formula="matmul").model_flops


def check_entry(entry, per_step_flops, tokens_per_step, *, prefix="throughput"):
    """An emitted window against the independent FLOPs and the callback's clock."""
    steps, window_s = entry["steps"], entry["window_s"]
    assert steps >= 1 and window_s > 0
    assert entry["step_flops"] == [pytest.approx(f, rel=1e-12) for f in per_step_flops]
    model_flops = sum(per_step_flops)
    assert entry["model_flops"] == pytest.approx(model_flops, rel=1e-12)
    m = entry["metrics"]
    # MFU = Σ model FLOPs / window time / peak
    assert m[f"{prefix}/mfu"] == pytest.approx(model_flops / window_s / PEAK, rel=1e-9)
    assert m[f"{prefix}/achieved_tflops"] == pytest.approx(model_flops / window_s / 1e12, rel=1e-9)
    assert m[f"{prefix}/tokens_per_sec"] == pytest.approx(sum(tokens_per_step) / window_s, rel=1e-9)
    assert m[f"{prefix}/step_time_s"] == pytest.approx(window_s / steps, rel=1e-9)
    assert m[f"{prefix}/peak_tflops"] == pytest.approx(PEAK_TFLOPS, rel=1e-12)


# ---- the three report_to backends ------------------------------------------------


def test_tensorboard_event_files_hold_the_counted_mfu(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    model = gpt2()
    cb = MFUCallback(peak_tflops=PEAK_TFLOPS)
    train(tmp_path, model, Fixed(), cb, report_to=["tensorboard"], max_steps=6)
    per_step = matmul_flops(model)  # one micro-batch of 2 x 8 per optimizer step
    # logs at steps 2, 4, 6; window = logging_steps = 2, warmup 1 -> 1, 2, 2 steps
    assert [e["step"] for e in cb.history] == [2, 4, 6]
    assert [e["steps"] for e in cb.history] == [1, 2, 2]
    for entry in cb.history:
        check_entry(entry, [per_step] * entry["steps"], [B * S] * entry["steps"])

    events = glob.glob(str(tmp_path / "out" / "**" / "events.out.tfevents*"), recursive=True)
    assert events
    acc = EventAccumulator(os.path.dirname(events[0]))
    acc.Reload()
    for key in ("mfu", "hfu", "tokens_per_sec", "achieved_tflops", "step_time_s", "peak_tflops"):
        scalars = acc.Scalars(f"train/throughput/{key}")
        assert [s.step for s in scalars] == [2, 4, 6]
        for scalar, entry in zip(scalars, cb.history):
            # event files store float32
            assert scalar.value == pytest.approx(entry["metrics"][f"throughput/{key}"], rel=1e-6)
    # the Trainer's log_history carries them too
    logged = [h for h in cb.history]
    trainer_rows = [r for r in acc.Scalars("train/loss")]
    assert len(trainer_rows) == len(logged)


def test_mlflow_file_store_holds_the_counted_mfu(tmp_path, monkeypatch):
    pytest.importorskip("mlflow")
    from mlflow.tracking import MlflowClient

    uri = (tmp_path / "mlruns").as_uri()
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", "mfu")
    model = llama()
    cb = MFUCallback(peak_tflops=PEAK_TFLOPS)
    train(tmp_path, model, Fixed(), cb, report_to=["mlflow"], max_steps=4)
    per_step = matmul_flops(model)
    assert [e["step"] for e in cb.history] == [2, 4]  # the loops below are not vacuous
    for entry in cb.history:
        check_entry(entry, [per_step] * entry["steps"], [B * S] * entry["steps"])

    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("mfu")
    (run,) = client.search_runs([experiment.experiment_id])
    for key in ("mfu", "hfu", "tokens_per_sec", "achieved_tflops", "peak_tflops"):
        history = sorted(client.get_metric_history(run.info.run_id, f"throughput/{key}"),
                         key=lambda m: m.step)
        assert [m.step for m in history] == [2, 4]
        for metric, entry in zip(history, cb.history):
            assert metric.value == pytest.approx(entry["metrics"][f"throughput/{key}"], rel=1e-12)


def test_wandb_offline_run_holds_the_counted_mfu(tmp_path, monkeypatch):
    wandb = pytest.importorskip("wandb")
    from _wandb_log import history_rows

    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_PROJECT", "mfu")
    model = gpt2()
    cb = MFUCallback(peak_tflops=PEAK_TFLOPS)
    try:
        train(tmp_path, model, Fixed(), cb, report_to=["wandb"], max_steps=4)
    finally:
        wandb.finish()
        wandb.teardown()  # stops wandb-core: the transaction log is complete on disk
    per_step = matmul_flops(model)
    assert [e["step"] for e in cb.history] == [2, 4]  # the loops below are not vacuous
    for entry in cb.history:
        check_entry(entry, [per_step] * entry["steps"], [B * S] * entry["steps"])

    (log,) = glob.glob(str(tmp_path / "wandb" / "offline-run-*" / "run-*.wandb"))
    rows = [r for r in history_rows(Path(log)) if "train/throughput/mfu" in r]
    assert [r["train/global_step"] for r in rows] == [2, 4]
    for row, entry in zip(rows, cb.history):
        for key in ("mfu", "hfu", "tokens_per_sec", "achieved_tflops", "peak_tflops"):
            assert row[f"train/throughput/{key}"] == pytest.approx(
                entry["metrics"][f"throughput/{key}"], rel=1e-12)


# ---- ordering: in the log dict before any report callback --------------------------


class Spy(TrainerCallback):
    def __init__(self):
        self.seen = []

    def on_log(self, args, state, control, logs=None, **kwargs):
        self.seen.append(dict(logs))


def test_keys_reach_callbacks_listed_before_it_and_added_after_init(tmp_path):
    spy = Spy()
    cb = MFUCallback(peak_tflops=PEAK_TFLOPS)
    args = TrainingArguments(output_dir=str(tmp_path / "out"), max_steps=4, per_device_train_batch_size=B,
                             logging_steps=2, report_to=[], use_cpu=True, save_strategy="no",
                             disable_tqdm=True)
    trainer = Trainer(model=gpt2(), args=args, train_dataset=Fixed(), callbacks=[spy])
    trainer.add_callback(cb)  # appended after the spy and after init: moved at train begin
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer.train()
    assert trainer.callback_handler.callbacks[0] is cb
    rows = [r for r in spy.seen if "loss" in r]
    assert len(rows) == 2 and all("throughput/mfu" in r for r in rows)
    # and the Trainer's own log_history (copied before on_log) is updated as well
    assert all("throughput/mfu" in r for r in trainer.state.log_history if "loss" in r)


# ---- gradient accumulation, sequence lengths, padding -------------------------------


@pytest.mark.parametrize("make_model", [gpt2, llama], ids=["gpt2", "llama"])
def test_gradient_accumulation_counts_every_micro_batch(tmp_path, make_model):
    model = make_model()
    cb = MFUCallback(peak_tflops=PEAK_TFLOPS)
    train(tmp_path, model, Fixed(), cb, gradient_accumulation_steps=3, max_steps=4)
    per_micro = matmul_flops(model)
    for entry in cb.history:
        # 3 micro-batches of 2 x 8 per optimizer step: 3x the FLOPs and 48 tokens
        check_entry(entry, [3 * per_micro] * entry["steps"], [3 * B * S] * entry["steps"])
    assert cb.history[-1]["step_flops"][0] == pytest.approx(3 * per_micro)


def test_variable_sequence_lengths_are_counted_per_step(tmp_path):
    lengths = [8, 12, 5, 16, 9]
    model = gpt2()
    cb = MFUCallback(peak_tflops=PEAK_TFLOPS)
    train(tmp_path, model, Varying(lengths), cb, max_steps=5, logging_steps=1)
    # window 1, warmup 1: logs at steps 2..5, each the step's own batch
    assert [e["step"] for e in cb.history] == [2, 3, 4, 5]
    for entry, length in zip(cb.history, lengths[1:]):
        check_entry(entry, [matmul_flops(model, seq=length)], [B * length])
    # the peer's single profile would have said the same for every step: it does not
    assert len({e["step_flops"][0] for e in cb.history}) == 4


def test_padding_counts_real_tokens_and_executed_shapes(tmp_path):
    lengths = [8, 3, 6, 6, 2, 7, 5, 1]   # batches of two: widths 8, 6, 7, 5
    model = gpt2()
    cb = MFUCallback(peak_tflops=PEAK_TFLOPS)
    train(tmp_path, model, Ragged(lengths), cb, collator=pad_collate, max_steps=4, logging_steps=1)
    pairs = [lengths[i:i + 2] for i in range(0, 8, 2)]
    assert [e["step"] for e in cb.history] == [2, 3, 4]  # window 1, warmup 1: the zip is not vacuous
    for entry, pair in zip(cb.history, pairs[1:]):
        width = max(pair)
        # counted: the padded shapes that ran; tokens/s: the real tokens only
        check_entry(entry, [matmul_flops(model, seq=width)], [sum(pair)])
    # batch 2 is [6, 6] (no padding), batch 3 is [2, 7]: 9 real tokens of 14
    assert cb.history[1]["tokens"] == 9


def test_analytic_flops_use_the_real_lengths_when_counting_is_off(tmp_path):
    lengths = [8, 3, 6, 6, 2, 7, 5, 1]
    model = gpt2()
    cb = MFUCallback(peak_tflops=PEAK_TFLOPS, count_every=0)
    train(tmp_path, model, Ragged(lengths), cb, collator=pad_collate, max_steps=4, logging_steps=1)
    pairs = [lengths[i:i + 2] for i in range(0, 8, 2)]
    assert [e["step"] for e in cb.history] == [2, 3, 4]  # window 1, warmup 1: the zip is not vacuous
    for entry, pair in zip(cb.history, pairs[1:]):
        check_entry(entry, [matmul_flops(model, seq_lens=pair)], [sum(pair)])


def test_a_type_without_a_formula_takes_the_exact_count_in_the_same_path(tmp_path):
    # stablelm has no analytic formula: transformer_flops counts it exactly
    # on the meta device, per real length; with counting off, each step's
    # FLOPs are that count, which equals FlopCounter on the real step
    from transformers import AutoConfig, AutoModelForCausalLM

    from mfu_tracker.counter import FlopCounter

    lengths = [8, 3, 6, 6, 2, 7, 5, 1]
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(AutoConfig.for_model(
        "stablelm", hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, vocab_size=VOCAB, bos_token_id=0,
        eos_token_id=0, pad_token_id=0, use_cache=False))
    cb = MFUCallback(peak_tflops=PEAK_TFLOPS, count_every=0)
    train(tmp_path, model, Ragged(lengths), cb, collator=pad_collate, max_steps=4, logging_steps=1)
    pairs = [lengths[i:i + 2] for i in range(0, 8, 2)]
    assert [e["step"] for e in cb.history] == [2, 3, 4]
    for entry, pair in zip(cb.history, pairs[1:]):
        exact = transformer_flops(model.config, seq_lens=pair, formula="matmul")
        assert exact.conventions["formula"] == "exact"
        check_entry(entry, [exact.model_flops], [sum(pair)])
        counted = 0
        for n in pair:  # each sequence on its own: what the real lengths run
            with FlopCounter() as fc:
                model(input_ids=torch.ones(1, n, dtype=torch.long)).logits.sum().backward()
            counted += fc.model_flops
        assert exact.model_flops == counted


def test_count_every_scales_uncounted_steps_by_tokens(tmp_path):
    lengths = [8, 8, 4, 4]
    model = gpt2()
    cb = MFUCallback(peak_tflops=PEAK_TFLOPS, count_every=2, warmup=0, window=1)
    train(tmp_path, model, Varying(lengths), cb, max_steps=4, logging_steps=1)
    counted8, counted4 = matmul_flops(model, seq=8), matmul_flops(model, seq=4)
    flops = [e["step_flops"][0] for e in cb.history]
    # steps 1 and 3 counted; 2 scaled from 1 (same tokens); 4 scaled from 3 (same tokens)
    assert flops == [pytest.approx(counted8), pytest.approx(counted8),
                     pytest.approx(counted4), pytest.approx(counted4)]


def test_gradient_checkpointing_raises_hfu_not_mfu(tmp_path):
    model = gpt2()
    cb = MFUCallback(peak_tflops=PEAK_TFLOPS)
    train(tmp_path, model, Fixed(), cb, gradient_checkpointing=True, max_steps=4)
    per_step = matmul_flops(model)
    assert [e["step"] for e in cb.history] == [2, 4]  # the loop below is not vacuous
    for entry in cb.history:
        check_entry(entry, [per_step] * entry["steps"], [B * S] * entry["steps"])
        # recompute: the forward runs twice -> executed > model
        assert entry["executed_flops"] > entry["model_flops"]
        assert entry["metrics"]["throughput/hfu"] > entry["metrics"]["throughput/mfu"]


# ---- no peak, bad input, nothing raises -------------------------------------------


def test_fp32_on_cpu_without_a_peak_omits_mfu_with_one_warning(tmp_path, monkeypatch):
    monkeypatch.setattr(gpu_table, "_warned", set())  # the lookup warns once per process
    from mfu_tracker.timing import _clock
    _clock.reset_caches()
    cb = MFUCallback()  # no peak: CPU has no datasheet row
    args = TrainingArguments(output_dir=str(tmp_path / "out"), max_steps=4, per_device_train_batch_size=B,
                             logging_steps=2, report_to=[], use_cpu=True, save_strategy="no",
                             disable_tqdm=True)
    trainer = Trainer(model=gpt2(), args=args, train_dataset=Fixed(), callbacks=[cb])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer.train()   # the peer crashed here: round(None)
    ours = [w for w in caught if "mfu_tracker" in str(w.message)]
    assert len(ours) == 1 and "MFU is unavailable" in str(ours[0].message)
    assert cb.resolved_dtype == "fp32"
    assert [e["step"] for e in cb.history] == [2, 4]  # the loop below is not vacuous
    for entry in cb.history:
        assert "throughput/mfu" not in entry["metrics"]
        assert "throughput/peak_tflops" not in entry["metrics"]
        assert entry["metrics"]["throughput/tokens_per_sec"] == pytest.approx(
            entry["steps"] * B * S / entry["window_s"])
    _clock.reset_caches()


def test_dtype_detection_from_args_and_model():
    cb = MFUCallback()

    class Args:
        bf16 = False
        fp16 = False
        device = torch.device("cpu")

    args = Args()
    assert cb._resolve_dtype(args, gpt2()) == "fp32"
    args.bf16 = True
    assert cb._resolve_dtype(args, gpt2()) == "bf16"
    args.bf16, args.fp16 = False, True
    assert cb._resolve_dtype(args, gpt2()) == "fp16"
    args.fp16 = False
    assert cb._resolve_dtype(args, gpt2().to(torch.bfloat16)) == "bf16"
    args.device = torch.device("cuda", 0)  # a CUDA run allowing TF32 matmuls
    previous = torch.backends.cuda.matmul.allow_tf32
    try:
        torch.backends.cuda.matmul.allow_tf32 = True
        assert cb._resolve_dtype(args, gpt2()) == "tf32"
    finally:
        torch.backends.cuda.matmul.allow_tf32 = previous
    assert MFUCallback(dtype="bfloat16")._resolve_dtype(args, gpt2()) == "bf16"


def test_a_user_spec_gives_mfu_without_warnings(tmp_path):
    spec = user_gpu_spec(PEAK_TFLOPS, name="test CPU")
    cb = MFUCallback(spec=spec)
    args = TrainingArguments(output_dir=str(tmp_path / "out"), max_steps=2, per_device_train_batch_size=B,
                             logging_steps=2, report_to=[], use_cpu=True, save_strategy="no",
                             disable_tqdm=True)
    trainer = Trainer(model=gpt2(), args=args, train_dataset=Fixed(), callbacks=[cb])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer.train()
    assert not [w for w in caught if "mfu_tracker" in str(w.message)]
    assert cb.history[-1]["metrics"]["throughput/peak_tflops"] == pytest.approx(PEAK_TFLOPS)


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(sample_batch=[1, 2, 3]), TypeError, "sample_batch"),
    (dict(sample_batch="input_ids"), TypeError, "sample_batch"),
    (dict(dtype="bf17"), ValueError, "dtype"),
    (dict(dtype=3), TypeError, "dtype"),
    (dict(num_gpus=0), ValueError, "num_gpus"),
    (dict(hfu_backward_factor=-1.0), ValueError, "hfu_backward_factor"),
    (dict(hfu_backward_factor=3.0, backward_factor=4.0), ValueError, "not both"),
    (dict(metric_prefix=None), TypeError, "metric_prefix"),
    (dict(peak_tflops=0), ValueError, "peak_tflops"),
    (dict(peak_tflops=math.nan), ValueError, "peak_tflops"),
    (dict(spec="H100"), TypeError, "spec"),
    (dict(count_every=-1), ValueError, "count_every"),
    (dict(causal_attention="quarter"), ValueError, "causal_attention"),
    (dict(clock="gpu"), ValueError, "clock"),
])
def test_bad_arguments_raise_at_construction(kwargs, error, match):
    with pytest.raises(error, match=match):
        MFUCallback(**kwargs)


def test_max_steps_zero_gives_one_warning_and_no_crash():
    cb = MFUCallback(peak_tflops=PEAK_TFLOPS)

    class State:
        max_steps = 0
        logging_steps = 1
        global_step = 0
        log_history = []

    handler = CallbackHandler([cb], gpt2(), None, None, None)
    control = TrainerControl()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        handler.on_train_begin(None, State(), control)
        handler.on_step_begin(None, State(), control)
        handler.on_step_end(None, State(), control)
        logs = {"loss": 1.0}
        handler.on_log(None, State(), control, logs)
        handler.on_train_end(None, State(), control)
    assert [str(w.message) for w in caught if "mfu_tracker" in str(w.message)] == [
        "mfu_tracker: the Trainer has no training steps (max_steps=0): no MFU"]
    assert logs == {"loss": 1.0}


def test_trainer_with_max_steps_zero_trains_nothing_and_does_not_crash(tmp_path):
    cb = MFUCallback(peak_tflops=PEAK_TFLOPS)
    train(tmp_path, gpt2(), Fixed(n=8), cb, max_steps=0, num_train_epochs=0)
    assert list(cb.history) == []


def test_model_without_parameters_warns_once_and_omits_mbu():
    class NoParams(torch.nn.Module):
        def forward(self, input_ids=None, **kwargs):
            return input_ids.float().sum()

    class Args:
        bf16 = fp16 = False
        device = torch.device("cpu")
        logging_strategy = "steps"
        gradient_checkpointing = False

    class State:
        max_steps = 2
        logging_steps = 1
        global_step = 0
        log_history = []

    cb = MFUCallback(peak_tflops=PEAK_TFLOPS, warmup=0)
    model = NoParams().train()
    handler = CallbackHandler([cb], model, None, None, None)
    control = TrainerControl()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        handler.on_train_begin(Args(), State(), control)
        handler.on_step_begin(Args(), State(), control)
        model(input_ids=torch.ones(2, 4, dtype=torch.long))
        handler.on_pre_optimizer_step(Args(), State(), control)
        handler.on_step_end(Args(), State(), control)
        logs = {}
        state = State()
        state.global_step = 1
        handler.on_log(Args(), state, control, logs)
        handler.on_train_end(Args(), State(), control)
    messages = [str(w.message) for w in caught if "mfu_tracker" in str(w.message)]
    assert messages == ["mfu_tracker: the model has no parameters: MBU is left out"]
    # nothing counted (no matmul): 0 FLOPs -> MFU 0; 8 tokens; no MBU
    assert logs["throughput/mfu"] == 0.0
    assert "throughput/mbu" not in logs
    assert logs["throughput/tokens_per_sec"] > 0


def test_a_failing_hook_warns_once_and_never_raises(monkeypatch):
    cb = MFUCallback(peak_tflops=PEAK_TFLOPS)

    def broken(*args):
        raise RuntimeError("broken dtype detection")

    monkeypatch.setattr(cb, "_resolve_dtype", broken)
    handler = CallbackHandler([cb], gpt2(), None, None, None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            handler.on_train_begin(object(), object(), TrainerControl())
    ours = [w for w in caught if "mfu_tracker" in str(w.message)]
    assert len(ours) == 1 and "on_train_begin failed" in str(ours[0].message)


def test_sample_batch_profile_is_used_when_nothing_else_is(tmp_path):
    class Plain(torch.nn.Module):   # no config: transformer_flops cannot be used
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(VOCAB, 16)
            self.out = torch.nn.Linear(16, VOCAB, bias=False)

        def forward(self, input_ids=None, labels=None):
            logits = self.out(self.emb(input_ids))
            loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten())
            return {"loss": loss, "logits": logits}

    sample = {"input_ids": torch.ones(1, S, dtype=torch.long), "labels": torch.ones(1, S, dtype=torch.long)}
    cb = MFUCallback(sample_batch=sample, peak_tflops=PEAK_TFLOPS, count_every=0)
    train(tmp_path, Plain(), Fixed(), cb, max_steps=4)
    # profile of 1 x 8 tokens: out is [8 x 16] @ [16 x 64]: forward 2*8*16*64 = 16384,
    # weight grad 16384, input grad 16384 (the embedding output requires grad) -> 49152
    # per 8 tokens; a step has 2 x 8 tokens -> 98304
    assert [e["step"] for e in cb.history] == [2, 4]  # the loop below is not vacuous
    for entry in cb.history:
        assert entry["step_flops"] == [pytest.approx(98304.0)] * entry["steps"]


# ---- one step-FLOPs policy: the optimizer wrapper and the callback agree ------------------
#
# Under torch.compile the counter gives a compiled region its eager model
# FLOPs: the compiled backward counts as it runs (a custom autograd
# Function's backward) and checkpoint recompute inside the compiled graph
# stays HFU-only (mfu_tracker/flops/counter/_compiled.py). Both integrations
# take the counted figures as they are (the earlier rule scaled a compiled
# step's executed FLOPs by the eager profile's ratio).
#
# The model: x [4 x 16] -> Linear(16, 8) -> ReLU -> Linear(8, 8), x not requiring grad,
# checkpointed: backward recomputes layer 1 (layer 2's output is not saved). Hand arithmetic:
#   forward        2·4·16·8 + 2·4·8·8             = 1024 + 512 = 1536
#   model FLOPs    forward + weight grads (1024 + 512) + the input grad of layer 2 (512)
#                                                  = 3584
#   executed       model + the recompute of layer 1 (1024) = 4608

IN_F, HID = 16, 8
FORWARD, MODEL, EXECUTED = 1536, 3584, 4608


class _Checkpointed(torch.nn.Module):
    """Takes input_ids= like a Trainer model; its body runs checkpointed."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.layers = torch.nn.Sequential(torch.nn.Linear(IN_F, HID, bias=False), torch.nn.ReLU(),
                                          torch.nn.Linear(HID, HID, bias=False))

    def forward(self, input_ids=None):
        return torch.utils.checkpoint.checkpoint(self.layers, input_ids, use_reentrant=False)


def _x():
    return torch.ones(4, IN_F)


def _wrapper_step_flops(model, sample_batch):
    from mfu_tracker.optim import MFUOptimizerWrapper

    opt = MFUOptimizerWrapper(torch.optim.SGD(model.parameters(), lr=0.0), model,
                              sample_batch=sample_batch, peak_tflops=PEAK_TFLOPS, clock="cpu",
                              warmup=0)
    with opt.track_step() as block:
        model(input_ids=_x()).sum().backward()
    opt.step()
    return opt.last_step_flops, (block.model_flops, block.executed_flops)


def _callback_step_flops(model, sample_batch):
    class Args:
        bf16 = fp16 = False
        device = torch.device("cpu")
        logging_strategy = "steps"
        gradient_checkpointing = False

    class State:
        max_steps = 1
        logging_steps = 1
        global_step = 1
        log_history = []

    cb = MFUCallback(sample_batch=sample_batch, peak_tflops=PEAK_TFLOPS, warmup=0, window=1,
                     clock="cpu")
    handler = CallbackHandler([cb], model, None, None, None)
    control = TrainerControl()
    handler.on_train_begin(Args(), State(), control)
    handler.on_step_begin(Args(), State(), control)
    model(input_ids=_x()).sum().backward()
    handler.on_pre_optimizer_step(Args(), State(), control)
    handler.on_step_end(Args(), State(), control)
    handler.on_log(Args(), State(), control, {})
    handler.on_train_end(Args(), State(), control)
    entry = cb.history[-1]
    return entry["model_flops"], entry["executed_flops"]


def test_a_compiled_checkpointed_model_gives_the_eager_figures_through_wrapper_and_callback():
    """torch.compile (backend "aot_eager", CPU) of the checkpointed model:
    the counter's model / executed FLOPs are the eager model's (recompute in
    the compiled backward graph executed, not model), and both integrations
    report them, with or without sample_batch, without a warning."""
    from mfu_tracker import FlopCounter

    eager = _Checkpointed()
    with FlopCounter(modules=False) as fc:
        eager(input_ids=_x()).sum().backward()
    assert (fc.model_flops, fc.executed_flops, fc.recompute_flops) == (MODEL, EXECUTED, 1024)
    compiled = torch.compile(_Checkpointed(), backend="aot_eager")
    with FlopCounter(modules=False):  # a tool set up before the first compiled call
        pass
    compiled(input_ids=_x()).sum().backward()   # compile once, outside the counter
    with FlopCounter(modules=False) as fc:
        compiled(input_ids=_x()).sum().backward()
    assert (fc.model_flops, fc.executed_flops, fc.forward_flops) == (MODEL, EXECUTED, FORWARD)
    for sample in (None, _x()):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            (step_model, step_executed), block = _wrapper_step_flops(compiled, sample)
            cb_model, cb_executed = _callback_step_flops(compiled, sample)
        assert step_model == block[0] == cb_model == MODEL
        assert step_executed == block[1] == cb_executed == EXECUTED
        assert not [w for w in caught if "compiled" in str(w.message)]


# ---- the job ledger: a run resumed from a checkpoint (docs/goodput.md) ---------


class TimedTrainer(Trainer):
    """A Trainer that clocks its own checkpoint saves and evaluation loops
    (the phases the callback marks must hold them)."""

    def __init__(self, *args, clocked=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.clocked = clocked

    def _save_checkpoint(self, model, trial):
        import time

        start = time.perf_counter()
        super()._save_checkpoint(model, trial)
        self.clocked["checkpoint"].append(time.perf_counter() - start)

    def evaluation_loop(self, *args, **kwargs):
        import time

        start = time.perf_counter()
        out = super().evaluation_loop(*args, **kwargs)
        self.clocked["eval"].append(time.perf_counter() - start)
        return out


def _resumable(tmp_path, log, max_steps, clocked, resume=None):
    args = TrainingArguments(output_dir=str(tmp_path / "out"), max_steps=max_steps,
                             per_device_train_batch_size=B, logging_steps=2, report_to=[],
                             use_cpu=True, save_strategy="steps", save_steps=4,
                             eval_strategy="steps", eval_steps=3, per_device_eval_batch_size=B,
                             disable_tqdm=True, learning_rate=1e-3, seed=0)
    trainer = TimedTrainer(model=gpt2(), args=args, train_dataset=Fixed(), eval_dataset=Fixed(4),
                           callbacks=[MFUCallback(peak_tflops=PEAK_TFLOPS, log_path=log)],
                           clocked=clocked)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer.train(resume_from_checkpoint=resume)


def test_a_resumed_trainer_run_shows_the_job_ledger(tmp_path, capsys):
    """Run 1 trains 6 steps (saves at 4 and 6, evaluates at 3 and 6); run 2
    resumes from checkpoint-4 and trains to 8: steps 4 and 5 are done twice."""
    import json

    from mfu_tracker.cli import main

    log = tmp_path / "job.jsonl"
    clocked = [{"checkpoint": [], "eval": []} for _ in range(2)]
    _resumable(tmp_path, log, 6, clocked[0])
    _resumable(tmp_path, log, 8, clocked[1], resume=str(tmp_path / "out" / "checkpoint-4"))
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    starts = [i for i, line in enumerate(lines) if line.get("record") == "run"]
    runs = [lines[starts[0]:starts[1]], lines[starts[1]:]]
    assert [run[0]["start_step"] for run in runs] == [0, 4]      # the Trainer's global_step
    # the intervals tile each run's steps (the Trainer also logs at an evaluation): run 1
    # trained steps 0..5, run 2 steps 4..7
    for run, (first, end) in zip(runs, ((0, 6), (4, 8))):
        spans = [(x["ledger"]["from_step"], x["ledger"]["to_step"]) for x in run if "ledger" in x]
        assert spans[0][0] == first and spans[-1] == (end, end)    # ... and the run end
        assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
        assert run[-1]["record"] == "run_end" and run[-1]["step"] == end
    for run, clock in zip(runs, clocked):
        # the save and evaluate hooks bracket what the Trainer clocked inside them
        phases = [x["ledger"]["phase_s"] for x in run if "ledger" in x]
        for phase in ("checkpoint", "eval"):
            assert clock[phase]
            assert math.fsum(p.get(phase, 0.0) for p in phases) >= math.fsum(clock[phase])
    assert len(clocked[0]["checkpoint"]) == 2 and len(clocked[1]["checkpoint"]) == 1

    status = main(["goodput", str(log), "--json", str(tmp_path / "g.json")])
    out, err = capsys.readouterr()
    assert status == 0, err
    g = json.loads((tmp_path / "g.json").read_text())
    lost = math.fsum(x["ledger"]["step_s"] for x in runs[0]
                     if "ledger" in x and x["ledger"]["from_step"] >= 4)
    assert g["badput_s/lost_progress"] == pytest.approx(lost, rel=1e-12) and lost > 0
    checkpoint = math.fsum(x["ledger"]["phase_s"].get("checkpoint", 0.0) for x in lines
                           if "ledger" in x)
    assert g["badput_s/checkpoint"] == pytest.approx(checkpoint, rel=1e-12)
    assert math.fsum([g["goodput"], *(v for k, v in g.items() if k.startswith("badput/"))]) == 1.0
    # every kept step's FLOPs were booked: 8 kept steps of the counted GPT-2 micro-batch
    flops = matmul_flops(gpt2())
    device_s = (runs[0][-1]["time"] - runs[0][0]["process_start"]) + \
        (runs[1][-1]["time"] - runs[0][-1]["time"])
    assert g["job_mfu"] == pytest.approx(8 * flops / device_s / PEAK, rel=1e-9)
    status = main(["report", str(log), "--out", str(tmp_path / "r.png"), "--run", "all",
                   "--numbers"])
    out, err = capsys.readouterr()
    assert status == 0, err
    assert "runs: the file holds 2" in out and "  run=2 start_step=4 " in out
