"""mfu_tracker/agent/_boot/sitecustomize.py: the startup hook, run as Python
runs it (first on PYTHONPATH) in fresh interpreters: it arms the agent right
after ``import torch`` when MFU_TRACKER_RUN is set, never imports
mfu_tracker otherwise, and runs the sitecustomize it shadows."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

from mfu_tracker.agent._config import BOOT_DIR, ENV_VAR, RunConfig

MODULE = "mfu_tracker.agent._boot.sitecustomize"


def python(code, tmp_path, *, config=None, extra_path=()):
    env = {k: v for k, v in os.environ.items() if k != ENV_VAR}
    env["PYTHONPATH"] = os.pathsep.join([BOOT_DIR, *map(str, extra_path),
                                         env.get("PYTHONPATH", "")])
    if config is not None:
        env[ENV_VAR] = config.to_env()
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=120)


def test_the_hook_is_the_boot_directorys_file():
    spec = importlib.util.find_spec(MODULE)
    assert spec is not None and os.path.dirname(spec.origin) == BOOT_DIR


def test_armed_after_import_torch_and_the_shadowed_hook_still_runs(tmp_path):
    shadowed = tmp_path / "theirs"
    shadowed.mkdir()
    (shadowed / "sitecustomize.py").write_text("import os\nos.environ['THEIRS_RAN'] = '1'\n")
    config = RunConfig.checked(log_path=str(tmp_path / "m.jsonl"))
    code = ("import os, sys\n"
            "before = 'mfu_tracker' in sys.modules\n"
            "import torch\n"
            "from mfu_tracker.agent import _step\n"
            "print(before, len(_step.ACTIVE), os.environ.get('THEIRS_RAN'),\n"
            "      type(torch.__spec__.loader).__name__ != '_ArmAfter')\n")
    out = python(code, tmp_path, config=config, extra_path=[shadowed])
    assert out.returncode == 0, out.stderr
    # mfu_tracker not imported before torch; one agent armed; their hook ran;
    # torch's own loader given back
    assert out.stdout.split() == ["False", "1", "1", "True"]


def test_without_the_variable_nothing_is_armed_or_imported(tmp_path):
    code = ("import sys, torch\n"
            "print('mfu_tracker' in sys.modules)\n")
    out = python(code, tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False" and out.stderr == ""
