"""RolesCallback with real TRL trainers on CPU: GRPOTrainer's rollout,
reference, learner and wait; DPOTrainer's learner and reference.

A tiny Llama built from a config and a word-level tokenizer built here (no
hub), saved to a temporary folder that both the policy and TRL's reference
model load. Every prompt has 4 tokens and every completion exactly 4
(``min_new_tokens``), so every step has the same shapes. The figures are
read back from the Trainer's log history and compared with:

* the rollout's FLOPs: GenerationCounter on a ``generate()`` of the same
  shapes, outside TRL; its bytes: the weights, K and V written and read,
  written out by hand below (docs/generation.md's table);
* the reference's and the learner's: FlopCounter on TRL's own log-prob
  forward of the same shapes (no_grad; with the backward);
* the wait: a host reward that sleeps, which must land in the wait.

Times are whatever the clock said; each figure times its own seconds must
give the independent count.
"""
from __future__ import annotations

import time
import warnings

import pytest

torch = pytest.importorskip("torch")
trl = pytest.importorskip("trl")
datasets = pytest.importorskip("datasets")

from tokenizers import Tokenizer, models, pre_tokenizers  # noqa: E402
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast  # noqa: E402

from mfu_tracker import FlopCounter, GenerationCounter, user_gpu_spec  # noqa: E402
from mfu_tracker.integrations.trl import RolesCallback  # noqa: E402

PEAK, BANDWIDTH = 1e12, 1e11          # user_gpu_spec(1.0, memory_bandwidth_tbs=0.1)
P, C, BATCH = 4, 4, 4                 # prompt tokens, completion tokens, completions a step
REWARD_SLEEP_S = 0.05
L, H, KV_HEADS, HEADS, VOCAB = 2, 32, 2, 4, 64


def _spec():
    return user_gpu_spec(1.0, memory_bandwidth_tbs=0.1)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("tiny")
    vocab = {"[PAD]": 0, "[EOS]": 1, "[UNK]": 2, **{f"w{i}": i + 3 for i in range(VOCAB - 3)}}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]", eos_token="[EOS]",
                            unk_token="[UNK]").save_pretrained(path)
    torch.manual_seed(0)
    LlamaForCausalLM(LlamaConfig(
        vocab_size=VOCAB, hidden_size=H, intermediate_size=64, num_hidden_layers=L,
        num_attention_heads=HEADS, num_key_value_heads=KV_HEADS, max_position_embeddings=64,
        pad_token_id=0, eos_token_id=1, bos_token_id=1)).save_pretrained(path)
    return str(path)


def _tokenizer(model_dir):
    return PreTrainedTokenizerFast.from_pretrained(model_dir)


def _slow_reward(completions, **kwargs):
    time.sleep(REWARD_SLEEP_S)                 # a rule on the host: no role, the wait
    return [float(len(c)) for c in completions]


def _grpo(model_dir, tmp, trainer_class=None, steps=3):
    from trl import GRPOConfig, GRPOTrainer

    ds = datasets.Dataset.from_dict({"prompt": [f"w{i} w{i + 1} w{i + 2} w{i + 3}"
                                                for i in range(16)]})
    args = GRPOConfig(output_dir=str(tmp), per_device_train_batch_size=BATCH, num_generations=2,
                      max_completion_length=C, generation_kwargs={"min_new_tokens": C},
                      max_steps=steps, logging_steps=1, beta=0.1, report_to=[], use_cpu=True,
                      save_strategy="no", disable_tqdm=True)
    return (trainer_class or GRPOTrainer)(model=model_dir, reward_funcs=_slow_reward, args=args,
                                          train_dataset=ds, processing_class=_tokenizer(model_dir))


@pytest.fixture(scope="module")
def grpo(model_dir, tmp_path_factory):
    trainer = _grpo(model_dir, tmp_path_factory.mktemp("grpo"))
    callback = RolesCallback(trainer, spec=_spec(), clock="cpu", warmup=1)
    trainer.add_callback(callback)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer.train()
    logs = [h for h in trainer.state.log_history if "role/learner/mfu" in h and "loss" in h]
    return trainer, logs, [str(w.message) for w in caught if "mfu_tracker" in str(w.message)]


def _logps_flops(trainer, model, backward):
    """TRL's own log-prob forward on a batch of the run's shapes, counted."""
    ids = torch.randint(3, VOCAB, (BATCH, P + C))
    mask = torch.ones_like(ids)
    with FlopCounter() as counter:
        if backward:
            logps, _, _ = trainer._get_per_token_logps_and_entropies(model, ids, mask, C,
                                                                     compute_entropy=True)
            logps.sum().backward()
            model.zero_grad(set_to_none=True)
        else:
            with torch.no_grad():
                trainer._get_per_token_logps_and_entropies(model, ids, mask, C)
    return counter.model_flops


def _rollout_flops(model):
    ids = torch.randint(3, VOCAB, (BATCH, P))
    with GenerationCounter(model) as gen:
        model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=C,
                       min_new_tokens=C, do_sample=True, pad_token_id=0)
    return gen.model_flops


def _rollout_bytes_by_hand(model):
    """docs/generation.md's table, fp32 (4 bytes), per step of BATCH sequences."""
    tied = model.config.tie_word_embeddings
    weights = sum(p.numel() for n, p in model.named_parameters() if "embed_tokens" not in n)
    weights += VOCAB * H if tied else 0                # the lm_head is read, tied or not
    forwards = 1 + (C - 1)                             # the prefill, then C - 1 decode steps
    kv_per_token = L * 2 * KV_HEADS * (H // HEADS) * 4  # K and V, every layer, fp32
    written = BATCH * (P + C - 1) * kv_per_token       # every prompt and fed-back token
    read = BATCH * sum(P + t for t in range(1, C)) * kv_per_token  # decode t attends P + t keys
    return forwards * weights * 4 + written + read


def test_grpo_logs_each_role_against_the_counts(grpo):
    trainer, logs, _ = grpo
    assert [h["step"] for h in logs] == [2, 3]         # step 1 is the warm-up
    model = trainer.accelerator.unwrap_model(trainer.model)
    rollout = _rollout_flops(model)
    reference = _logps_flops(trainer, trainer.ref_model, backward=False)
    learner = _logps_flops(trainer, model, backward=True)
    assert reference > 0 and learner > 2 * reference   # the backward ran
    nbytes = _rollout_bytes_by_hand(model)
    for h in logs:
        t = {r: h[f"role/{r}/time_s"] for r in ("rollout", "reference", "learner")}
        assert h["role/rollout/mfu"] * PEAK * t["rollout"] == pytest.approx(rollout, rel=1e-9)
        assert h["role/rollout/mbu"] * BANDWIDTH * t["rollout"] == pytest.approx(nbytes, rel=1e-9)
        assert h["role/rollout/tokens_per_sec"] * t["rollout"] == pytest.approx(BATCH * C)
        assert h["role/reference/mfu"] * PEAK * t["reference"] == pytest.approx(reference,
                                                                                rel=1e-9)
        assert h["role/reference/tokens_per_sec"] * t["reference"] == pytest.approx(BATCH * (P + C))
        assert h["role/learner/mfu"] * PEAK * t["learner"] == pytest.approx(learner, rel=1e-9)
        assert h["role/learner/tokens_per_sec"] * t["learner"] == pytest.approx(BATCH * (P + C))
        # the host reward runs inside training_step: it is the wait, not the learner's
        assert h["wait_s"] >= REWARD_SLEEP_S
        wall = h["step_time_s"]          # the tracker's clock: the roles' and the wait's, to 1e-3
        assert sum(t.values()) + h["wait_s"] == pytest.approx(wall, rel=1e-3)
        assert h["wait_ratio"] == pytest.approx(h["wait_s"] / wall, rel=1e-9)
        shares = sum(h[f"role/{r}/time_share"] for r in t)
        # the roles' host clock and the tracker's differ by the boundary's own call
        assert shares + h["wait_ratio"] == pytest.approx(1.0, rel=1e-3)
        assert h["mfu_end_to_end"] * PEAK * wall == pytest.approx(rollout + reference + learner,
                                                                  rel=1e-9)
        assert h["mfu_lost/wait"] == pytest.approx(h["wait_ratio"], rel=1e-9)
        assert "role/reward/mfu" not in h and "role/weight_sync/mfu" not in h


def test_grpo_run_is_untouched(grpo):
    trainer, _, messages = grpo
    assert messages == []
    # the wrappers are gone after training: the trainer's methods are its class's again
    for name in ("training_step", "_prepare_inputs", "_generate", "_calculate_rewards"):
        assert name not in vars(trainer)


def test_a_trl_without_the_methods_warns_and_leaves_the_roles_out(model_dir, tmp_path):
    from trl import GRPOTrainer

    class Renamed(GRPOTrainer):      # a TRL whose generation method is called otherwise
        _generate = None

        def _generate_renamed(self, prompts):
            return GRPOTrainer._generate(self, prompts)

    trainer = _grpo(model_dir, tmp_path, Renamed, steps=2)
    trainer._generate = trainer._generate_renamed
    trainer.add_callback(RolesCallback(trainer, spec=_spec(), clock="cpu", warmup=0))
    with pytest.warns(RuntimeWarning, match="has no _generate.*left out"):
        trainer.train()
    assert trainer.state.global_step == 2
    assert not any(k.startswith("role/") or k == "wait_ratio"
                   for h in trainer.state.log_history for k in h)


def test_bad_arguments(grpo):
    trainer = grpo[0]
    with pytest.raises(TypeError, match="trainer must be a trl GRPOTrainer or DPOTrainer"):
        RolesCallback(object())
    with pytest.raises(TypeError, match="metric_prefix"):
        RolesCallback(trainer, metric_prefix=3, spec=_spec())
    with pytest.raises((TypeError, ValueError), match="window"):
        RolesCallback(trainer, window=0, spec=_spec())


# ---- DPO: the learner, and its reference forward ------------------------------

@pytest.fixture(scope="module")
def dpo(model_dir, tmp_path_factory):
    from trl import DPOConfig, DPOTrainer

    ds = datasets.Dataset.from_dict({"prompt": ["w1 w2 w3"] * 8, "chosen": ["w4 w5"] * 8,
                                     "rejected": ["w6 w7"] * 8})
    args = DPOConfig(output_dir=str(tmp_path_factory.mktemp("dpo")), per_device_train_batch_size=2,
                     max_steps=3, logging_steps=1, report_to=[], use_cpu=True, save_strategy="no",
                     disable_tqdm=True)
    trainer = DPOTrainer(model=model_dir, args=args, train_dataset=ds,
                         processing_class=_tokenizer(model_dir))
    trainer.add_callback(RolesCallback(trainer, spec=_spec(), clock="cpu", warmup=1))
    trainer.train()
    batch = next(iter(trainer.get_train_dataloader()))
    return trainer, [h for h in trainer.state.log_history if "role/learner/mfu" in h
                     and "loss" in h], batch


def test_dpo_learner_and_reference(dpo):
    trainer, logs, batch = dpo
    assert [h["step"] for h in logs] == [2, 3]
    model = trainer.accelerator.unwrap_model(trainer.model)
    kwargs = {"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"],
              "use_cache": False, "fused_lm_head": True,
              "labels": batch["input_ids"].masked_fill(batch["completion_mask"] == 0, -100)}
    with FlopCounter() as counter:
        model(**kwargs).log_probs.sum().backward()
    model.zero_grad(set_to_none=True)
    learner = counter.model_flops
    with FlopCounter() as counter, torch.no_grad():
        trainer.ref_model(**kwargs)
    reference = counter.model_flops
    tokens = float(batch["attention_mask"].sum())
    for h in logs:
        assert h["role/learner/mfu"] * PEAK * h["role/learner/time_s"] == pytest.approx(learner,
                                                                                        rel=1e-9)
        assert h["role/reference/mfu"] * PEAK * h["role/reference/time_s"] == pytest.approx(
            reference, rel=1e-9)
        assert h["role/learner/tokens_per_sec"] * h["role/learner/time_s"] == pytest.approx(tokens)
        wall = h["step_time_s"]
        # the roles and the wait are read on the roles' clock, the step on the tracker's,
        # a moment apart: the roles' step never outlasts the tracker's (a busy machine
        # widens the moment, so no lower bound here)
        assert h["wait_s"] >= 0.0
        assert h["role/learner/time_s"] + h["role/reference/time_s"] + h["wait_s"] <= \
            wall * (1 + 1e-9)
        assert h["mfu_end_to_end"] * PEAK * wall == pytest.approx(learner + reference, rel=1e-9)
        assert "role/rollout/mfu" not in h
