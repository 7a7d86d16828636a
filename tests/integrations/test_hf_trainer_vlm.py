"""MFUCallback on a VLM (a tiny Qwen2.5-VL) with a real transformers.Trainer.

The callback takes each batch's ``image_grid_thw`` from the model's inputs,
so the vision tower is in the model FLOPs (the honest ``mfu``), and logs
``mfu_language`` beside it (the tower left out: the lmms-engine
convention). Checked against ``transformer_flops`` with the same grids
(itself exact against the counter: tests/flops/test_analytic.py) and the
callback's own clock.
"""
from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("accelerate")

from mfu_tracker import transformer_flops  # noqa: E402
from mfu_tracker.integrations.hf_trainer import MFUCallback  # noqa: E402

PEAK_TFLOPS = 0.5
PEAK = PEAK_TFLOPS * 1e12
S = 48
# one image a sample, two sizes: 96 patches (24 image tokens) or 32 (8)
GRIDS = [[1, 8, 12], [1, 4, 8]]
TEXT = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
            intermediate_size=96, vocab_size=160, head_dim=16,
            rope_parameters={"rope_type": "default", "rope_theta": 1e4,
                             "mrope_section": [2, 3, 3]})
VISION = dict(depth=2, hidden_size=16, intermediate_size=48, num_heads=2, patch_size=4,
              spatial_merge_size=2, temporal_patch_size=2, out_hidden_size=64, window_size=16,
              fullatt_block_indexes=[1])


def model():
    config = transformers.Qwen2_5_VLConfig(text_config=TEXT, vision_config=VISION,
                                           image_token_id=150, video_token_id=151,
                                           vision_start_token_id=152, vision_end_token_id=153)
    torch.manual_seed(0)
    return transformers.Qwen2_5_VLForConditionalGeneration._from_config(
        config, attn_implementation="eager")


class Images(torch.utils.data.Dataset):
    """Samples of S tokens, each with one image of GRIDS[i % 2]."""

    def __len__(self) -> int:
        return 16

    def __getitem__(self, i: int):
        t, h, w = GRIDS[i % 2]
        g = torch.Generator().manual_seed(i)
        ids = torch.randint(0, 140, (S,), generator=g)
        n = t * h * w // 4
        ids[4], ids[5:5 + n], ids[5 + n] = 152, 150, 153
        return {"input_ids": ids, "labels": ids,
                "pixel_values": torch.randn(t * h * w, 3 * 2 * 4 * 4, generator=g),
                "image_grid_thw": torch.tensor([[t, h, w]])}


def collate(items):
    return {"input_ids": torch.stack([x["input_ids"] for x in items]),
            "labels": torch.stack([x["labels"] for x in items]),
            "pixel_values": torch.cat([x["pixel_values"] for x in items]),
            "image_grid_thw": torch.cat([x["image_grid_thw"] for x in items])}


def train(tmp_path, callback):
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path / "out"), max_steps=3, per_device_train_batch_size=1,
        logging_steps=1, report_to=[], use_cpu=True, save_strategy="no", disable_tqdm=True,
        learning_rate=1e-3, seed=0, remove_unused_columns=False)
    trainer = transformers.Trainer(model=model(), args=args, train_dataset=Images(),
                                   callbacks=[callback], data_collator=collate)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer.train()
    return trainer


@pytest.mark.parametrize("count_every", [0, 1])  # analytic; counted every step
def test_vlm_steps_log_the_honest_mfu_and_mfu_language(tmp_path, count_every):
    cb = MFUCallback(peak_tflops=PEAK_TFLOPS, count_every=count_every, window=1, warmup=0)
    trainer = train(tmp_path, cb)
    config = trainer.model.config
    assert [e["step"] for e in cb.history] == [1, 2, 3]
    for entry in cb.history:
        # the sampler shuffles: which image size a step had is read back
        # from its FLOPs, each the analytic count of its one sample
        counts = [transformer_flops(config, seq_len=S, image_grid_thw=[g], formula="matmul")
                  for g in GRIDS]
        step = entry["step_flops"][0]
        f = min(counts, key=lambda c: abs(c.model_flops - step))
        assert step == pytest.approx(f.model_flops, rel=1e-12)  # the tower is in it
        m, window_s = entry["metrics"], entry["window_s"]
        assert m["throughput/mfu"] == pytest.approx(f.model_flops / window_s / PEAK, rel=1e-9)
        # the lmms-engine convention: language-model FLOPs only
        assert m["throughput/mfu_language"] == pytest.approx(
            f.language_flops / window_s / PEAK, rel=1e-9)
        assert f.vision_flops > 0 and m["throughput/mfu_language"] < m["throughput/mfu"]


def test_a_text_model_logs_no_mfu_language(tmp_path):
    from transformers import LlamaConfig, LlamaForCausalLM

    cb = MFUCallback(peak_tflops=PEAK_TFLOPS, count_every=0, window=1, warmup=0)
    config = LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                         num_attention_heads=4, num_key_value_heads=2, vocab_size=64,
                         bos_token_id=0, eos_token_id=0, pad_token_id=0)

    class Text(torch.utils.data.Dataset):
        def __len__(self):
            return 8

        def __getitem__(self, i):
            ids = torch.randint(1, 64, (8,), generator=torch.Generator().manual_seed(i))
            return {"input_ids": ids, "labels": ids}

    args = transformers.TrainingArguments(
        output_dir=str(tmp_path / "out"), max_steps=2, per_device_train_batch_size=2,
        logging_steps=1, report_to=[], use_cpu=True, save_strategy="no", disable_tqdm=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        transformers.Trainer(model=LlamaForCausalLM(config), args=args, train_dataset=Text(),
                             callbacks=[cb]).train()
    assert cb.history and all("throughput/mfu" in e["metrics"] for e in cb.history)
    assert not any("throughput/mfu_language" in e["metrics"] for e in cb.history)
