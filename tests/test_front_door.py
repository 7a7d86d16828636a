"""The front door, as a new user meets it: each case through the
public API or the command line, with what it must say.

References: the A100 datasheet (every A100 row: bf16 312 TFLOP/s; memory
bandwidth 40GB 1,555 GB/s, 80GB SXM 2,039 GB/s, 80GB PCIe 1,935 GB/s) and the
H100 datasheet (bf16 SXM 989.4, PCIe 756.5), as in csrc/core/peaks/gpu_table.c.
The installation cases (distribution name, mixed install, wheel contents)
are in tests/install/, the README's snippets in tests/test_readme.py.
"""
from __future__ import annotations

import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch

import mfu_tracker
from mfu_tracker import Tracker, lookup_gpu_spec, param_bytes, track, transformer_flops
from mfu_tracker._install import DISTRIBUTION
from mfu_tracker.cli._gpus import NONE, UNPUBLISHED

from _cli import field
from _cli import run_cli as cli

ROOT = Path(mfu_tracker.__file__).resolve().parent.parent
ESTIMATE = ("estimate", "--params", "7e9", "--tokens-per-sec", "1000")

# ---- ambiguous device names -----------------------------------------------------------


@pytest.mark.parametrize("gpu, rows, bandwidth", [
    ("A100", ["A100 SXM4 40GB", "A100 SXM4 80GB", "A100 PCIe 40GB", "A100 PCIe 80GB"],
     "differ (1.555, 1.935, 2.039 TB/s)"),
    ("A100 80GB", ["A100 SXM4 80GB", "A100 PCIe 80GB"], "differ (1.935, 2.039 TB/s)"),
    ("A100 40GB", ["A100 SXM4 40GB", "A100 PCIe 40GB"], "the same, 1.555 TB/s"),
])
def test_a_name_whose_rows_share_the_peak_uses_it_and_says_which_rows(capsys, gpu, rows, bandwidth):
    status, out, err = cli(capsys, *ESTIMATE, "--gpu", gpu)
    assert status == 0, err
    assert err == ""  # no Python warning naming Python functions on a command line
    # 6 * 7e9 = 4.2e10 FLOP/token x 1,000 tokens/s = 42.0 TFLOP/s; / 312 = 13.46%
    assert field(out, "MFU") == "13.46%"
    assert field(out, "peak used (per GPU)").startswith(f"312 TFLOP/s dense bf16, each row '{gpu}' fits")
    note = field(out, "note")
    assert f"--gpu '{gpu}' fits {len(rows)} rows ({', '.join(rows)})" in note
    assert bandwidth in note
    if "differ" in bandwidth:
        assert "so MBU is unavailable" in note


@pytest.mark.parametrize("gpu", ["H100", "H100 80GB", "NVIDIA H100"])
def test_a_name_whose_rows_differ_lists_them_with_their_peaks(capsys, gpu):
    status, out, err = cli(capsys, *ESTIMATE, "--gpu", gpu)
    assert status == 2 and out == ""
    (line,) = err.strip().splitlines()
    assert line.startswith(f"mfu-tracker estimate: error: --gpu '{gpu}' fits 2 rows")
    assert "dense bf16 peaks" in line
    assert "H100 SXM (989.4), H100 PCIe (756.5)" in line
    assert "--gpu 'H100 SXM'" in line and "--peak-tflops" in line
    assert "lookup_gpu_spec" not in line and "user_gpu_spec" not in line


def test_the_rows_are_compared_for_the_dtype_asked(capsys):
    # no A100 row has fp8: named as a --dtype problem, with what the rows have
    status, _, err = cli(capsys, *ESTIMATE, "--gpu", "A100", "--dtype", "fp8")
    assert status == 2
    assert "--dtype fp8: no row that --gpu 'A100' fits has a dense fp8 peak" in err
    assert "fp64, fp32, tf32, fp16, bf16, int8, int4" in err


def test_lookup_gpu_spec_names_the_candidates():
    with pytest.warns(UserWarning, match=r"'H100' fits 2 rows .*H100 SXM \(989\.4\), H100 PCIe "
                                         r"\(756\.5\) TFLOP/s dense bf16") as caught:
        assert lookup_gpu_spec("H100") is None
    assert "lookup_gpu_spec('H100 SXM')" in str(caught[0].message)
    with pytest.warns(UserWarning, match="'A100' fits 4 rows"):
        a100 = lookup_gpu_spec("A100")
    assert a100.peak_tflops("bf16") == 312.0
    assert [c.name for c in a100.candidates] == [
        "A100 SXM4 40GB", "A100 SXM4 80GB", "A100 PCIe 40GB", "A100 PCIe 80GB"]
    assert a100.memory_bandwidth_bytes_per_sec == 0.0  # the rows differ: no MBU ...
    assert "their memory bandwidths differ (1.555, 1.935, 2.039 TB/s), so MBU is unavailable" \
        in a100.match_note  # ... and the reason
    with track(1e3, 80e9, dtype="bf16", spec=a100) as result:
        pass
    assert result.mfu is not None and result.mbu is None
    with pytest.warns(UserWarning, match="the same"):
        a100_40 = lookup_gpu_spec("A100 40GB")
    assert a100_40.memory_bandwidth_bytes_per_sec == 1555e9
    with track(1e3, 80e9, dtype="bf16", spec=a100_40) as result:
        pass
    assert result.mbu is not None


# ---- the peak table's cells -------------------------------------------------------------


def test_gpus_tells_no_peak_from_not_published(capsys):
    status, out, _ = cli(capsys, "gpus")
    assert status == 0
    assert f"'{NONE}': the device has no dense peak" in out
    assert f"'{UNPUBLISHED}': it has one, but no source publishes" in out
    header = next(line for line in out.splitlines() if line.startswith("device"))
    columns = header.split()[1:]
    rows = {line[:28].strip(): line[28:].split() for line in out.splitlines()
            if line[:28].strip() in ("B300", "A100 SXM4 80GB", "A10G", "GB300")}
    b300 = dict(zip(columns, rows["B300"]))
    # B300: int8 only sparse, dense fp4 unverified, bandwidth and SMs not sourced
    assert b300["int8"] == b300["fp4"] == b300["TB/s"] == b300["SMs"] == UNPUBLISHED
    assert b300["bf16"] == "2250"
    a100 = dict(zip(columns, rows["A100 SXM4 80GB"]))
    assert a100["fp8"] == a100["fp4"] == NONE  # Ampere has no fp8 / fp4 units
    assert a100["TB/s"] == "2.04" and a100["SMs"] == "108"
    a10g = dict(zip(columns, rows["A10G"]))
    assert a10g["bf16"] == a10g["SMs"] == UNPUBLISHED
    assert "0.00" not in rows["B300"] and "0" not in rows["B300"]


# ---- errors that name the public argument or flag, before any work ------------------------


def test_estimate_seq_len_names_the_flag(capsys):
    status, out, err = cli(capsys, "estimate", "--model", "llama-3.1-8b", "--gpu", "B200",
                           "--tokens-per-sec", "1000", "--seq-len", "-1")
    assert status == 2 and out == ""
    assert err.strip().splitlines()[-1] == \
        "mfu-tracker estimate: error: argument --seq-len: must be an integer >= 1, got -1"


def test_doctor_checks_its_json_path_before_any_check(capsys, tmp_path):
    missing = tmp_path / "missing" / "x.json"
    status, out, err = cli(capsys, "doctor", "--quick", "--json", str(missing))
    assert status == 2
    assert out == ""  # no check ran: the table was never printed
    assert f"--json {missing}: the directory {missing.parent} does not exist" in err
    status, _, err = cli(capsys, "doctor", "--quick", "--json", str(tmp_path))
    assert status == 2 and "is a directory" in err


def test_track_on_a_cuda_device_without_one_names_device():
    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device")
    with pytest.raises(ValueError, match=r"device='cuda': no CUDA device is available \("):
        with track(1e9, device="cuda"):
            raise AssertionError("the block must not run")
    with pytest.raises(ValueError, match=r"device=1: no CUDA device"):
        Tracker(1e9, device=1)


def test_end_phase_with_a_name_names_tracker_not_an_internal_class():
    tracker = Tracker(1e9, peak_tflops=1.0, clock="cpu")
    with pytest.raises(TypeError) as caught:
        tracker.end_phase("forward")
    message = str(caught.value)
    assert message.startswith("Tracker.end_phase() takes no arguments (1 given: 'forward')")
    assert "StepTracker" not in message and "with tracker.phase(name):" in message
    with pytest.raises(TypeError, match=r"^Tracker\.begin_phase\(\) takes one argument, the phase name"):
        tracker.begin_phase()
    tracker.begin_phase("forward")  # the right calls still work
    tracker.end_phase()
    assert tracker.phase_depth() == 0


def test_a_preset_name_is_a_config():
    by_name = transformer_flops("llama-3.1-8b", seq_len=8192)
    by_dict = transformer_flops(mfu_tracker.load_preset("llama-3.1-8b"), seq_len=8192)
    assert by_name.model_flops == by_dict.model_flops
    # Lambda's appendix: 57,914,449,920 FLOP/token for Llama-3.1-8B at seq 8,192 (tests/cli/test_cli.py)
    assert by_name.flops_per_token == 57_914_449_920
    with pytest.raises(ValueError, match=r"^config 'llama-9' is neither a preset \(gpt2, "):
        transformer_flops("llama-9", seq_len=8)


def test_metrics_is_empty_for_the_first_steps_and_the_docs_say_why():
    tracker = Tracker(1e9, peak_tflops=1.0, clock="cpu", warmup=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # by design, not a failure: no warning
        tracker.step(10)
        assert tracker.metrics() == {}  # the clock started
        tracker.step(10)
        assert tracker.metrics() == {}  # one step closed: the warm-up one
        tracker.step(10)
        assert "throughput/mfu" in tracker.metrics()  # the third step() call
    doc = " ".join(Tracker.metrics.__doc__.split())
    assert "``{}`` until a measured step is in the window" in doc
    assert "with ``warmup=1`` the first figures come after the third ``step()`` call" in doc
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert "`metrics()` is `{}` until one step after the warm-up has closed" in readme
    assert "so the first figures come at the third `step()` call" in readme


def test_zero_flops_or_a_model_without_parameters_is_not_a_silent_zero():
    with pytest.raises(ValueError, match=r"flop_count: must be a finite number > 0, got 0: .*MFU 0"):
        with track(0, peak_tflops=1.0):
            raise AssertionError("the block must not run")
    with pytest.raises(ValueError, match=r"model has no parameters \(ReLU\)"):
        param_bytes(torch.nn.ReLU())
    with pytest.raises(ValueError, match=r"param_bytes: must be a finite number > 0 or None, got 0"):
        track(1e9, 0)
    with pytest.raises(ValueError, match=r"flops_per_step must be a finite number > 0 or None, got 0"):
        Tracker(0)


# ---- small things -------------------------------------------------------------------------


def test_profile_lines_are_aligned(capsys):
    status, out, _ = cli(capsys, "profile", "--model", "gpt2", "--seq-len", "16", "--depth", "1")
    assert status == 0
    head = out.split("\n\n")[0].splitlines()
    columns = {len(line) - len(line.split(":", 1)[1].lstrip()) for line in head}
    assert len(columns) == 1, head  # every value starts in the same column
    assert any(line.startswith("analytic (matmul):") for line in head)


def test_the_overhead_claim_says_what_is_measured():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    costs = readme[readme.index("## What it costs"):].split("\n## ")[0]
    assert "benchmarks/README.md" in costs and "docs/performance.md" in costs
    text = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")
    claim = text[text.index("**A counter cheap enough to leave on**"):].split("\n\n")[0]
    assert "measured per call" in claim and "a sum of per-call costs" in claim
    assert "±2%" in claim  # the end-to-end noise that hides it, said
    assert "mfu-tracker doctor" in claim and "middle half of the" in claim


def test_the_distribution_is_torch_mfu_and_the_console_script_mfu_tracker():
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert f'name = "{DISTRIBUTION}"' in pyproject and DISTRIBUTION == "torch-mfu"
    assert 'mfu-tracker = "mfu_tracker.cli:main"' in pyproject
    proc = subprocess.run([sys.executable, "-m", "mfu_tracker", "gpus"], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0 and "H100 SXM" in proc.stdout


def test_the_readme_install_works_today_and_serves_a_cpu_box():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    install = text[text.index("## Install\n"):text.index("\n## ", text.index("## Install\n") + 1)]
    # one install that works today, from the checkout; written for a reader with a GPU
    # (PyPI's torch, built with CUDA) and for one without (torch's CPU build)
    assert "\npip install torch          # with an NVIDIA GPU" in install
    assert ("without a GPU" in install
            and "pip install torch --index-url https://download.pytorch.org/whl/cpu" in install
            and "\npip install .\n" in install)
    assert "no GPU here" not in install                 # the writer's machine is not the reader's
    assert "pip install torch-mfu" not in text          # not on PyPI: a line that would fail
    # the details, the extras and the peer warning live in docs/install.md
    page = (ROOT / "docs" / "install.md").read_text(encoding="utf-8")
    assert "pip uninstall mfu-tracker" in page and "pip uninstall -y mfu-tracker torch-mfu" in page
    for extra in ("hf", "lightning", "report", "prometheus"):
        assert f'pip install ".[{extra}]"' in page


def test_the_readme_speaks_of_the_product_not_its_history():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    for word in ("issue", "DESIGN", "session", "helper", "was once called"):
        assert word not in text, word
    first_screen = text[:text.index("## The names the examples use")]
    assert "unverified on real hardware" in " ".join(first_screen.split())
    assert "pip install ." in first_screen
    assert "```python" in first_screen                  # the quick start
    assert "\nmake run    # " in first_screen            # the demo, and its time as measured
    assert re.search(r"`time make run` from a fresh clone took \d+ min \d+ s",
                     " ".join(first_screen.split()))
    for page in (ROOT / "docs").glob("*.md"):
        body = page.read_text(encoding="utf-8")
        assert not re.search(r"\bissues? \d", body) and "DESIGN" not in body, page.name


def test_every_install_a_message_recommends_works_while_the_package_is_on_no_index():
    tomllib = pytest.importorskip("tomllib")   # Python 3.11+

    from mfu_tracker._install import extra_install

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for extra in ("report", "hf", "prometheus", "lightning"):
        # the extra's own requirements, as pyproject.toml lists them: on the index today
        assert extra_install(extra) == "pip install " + " ".join(f"'{r}'" for r in extras[extra])
    # no message names the distribution with an extra (`pip install 'torch-mfu[hf]'`)
    for path in (ROOT / "mfu_tracker").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"pip install '?(torch-mfu|\{DISTRIBUTION\})\[", text), path
