"""Smoke test of an installed mfu-tracker (run by `make install-check`).

Run with the python of a fresh venv holding torch and the package installed
by a plain `pip install <sdist or wheel>`, from a directory outside the
checkout. Checks: the import comes from site-packages; ``track()``; a
``FlopCounter`` whose backend is the C++ observer built at first use (or
loaded from the cache a previous check built: ``--expect cached``); the
``mfu-tracker`` console script's ``estimate`` and ``gpus --detect``.
Exits non-zero with a message on the first failure.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import sysconfig
import warnings
from pathlib import Path


def check(ok: bool, what: str) -> None:
    if not ok:
        sys.exit(f"install smoke: FAILED: {what}")
    print(f"install smoke: ok: {what}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--expect", choices=["build", "cached"], required=True,
                        help="whether this run must build the observer or find it cached")
    args = parser.parse_args()

    warnings.simplefilter("error", RuntimeWarning)  # a fallback warning fails the check
    import torch

    import mfu_tracker
    from mfu_tracker import FlopCounter, counter_backend, track

    from importlib import metadata

    from mfu_tracker._install import DISTRIBUTION

    dist = metadata.distribution(DISTRIBUTION)
    check(any(str(f) == "mfu_tracker/__init__.py" for f in dist.files or ()),
          f"the distribution {DISTRIBUTION} {dist.version} installed mfu_tracker/")

    site = Path(sysconfig.get_paths()["purelib"]).resolve()
    check(Path(mfu_tracker.__file__).resolve().is_relative_to(site),
          f"mfu_tracker imported from site-packages ({mfu_tracker.__file__})")
    check(not list((site / "mfu_tracker").glob("_torch*.so")),
          "the installed package has no prebuilt _torch (isolated build)")
    check(any((site / "mfu_tracker" / "_csrc" / "torch").glob("*.cpp")),
          "the observer's sources are installed (mfu_tracker/_csrc)")

    # track(): 1e12 FLOPs in a timed block, with a given peak of 100 TFLOP/s
    with track(1e12, dtype="bf16", peak_tflops=100.0) as result:
        torch.ones(64, 64) @ torch.ones(64, 64)
    check(result.elapsed_sec > 0 and result.mfu is not None and
          abs(result.mfu - 1e12 / (result.elapsed_sec * 100e12)) <= 1e-9 * result.mfu,
          f"track() timed the block ({result.elapsed_sec} s, MFU {result.mfu})")

    # the first counter builds (or loads) the C++ observer
    cache = os.environ.get("MFU_TRACKER_CACHE_DIR", "")
    check(bool(cache), "MFU_TRACKER_CACHE_DIR is set")
    built_before = sorted(Path(cache).rglob("_torch*.so"))
    check(bool(built_before) == (args.expect == "cached"),
          f"the cache {'holds' if args.expect == 'cached' else 'lacks'} a build before the first "
          f"counter ({built_before})")
    a, b = torch.randn(4, 8, requires_grad=True), torch.randn(8, 3)
    with FlopCounter() as fc:
        (a @ b).sum().backward()
    check(counter_backend() == "torch-ext", f"FlopCounter backend is the C++ observer "
          f"({counter_backend()})")
    observer = sys.modules["mfu_tracker._torch"].__file__
    check(observer.startswith(cache), f"observer loaded from the cache ({observer})")
    # forward mm 2*4*8*3 = 192; backward grad of a: [4,3] @ [3,8] = 2*4*3*8 = 192
    check(fc.executed_flops == 384, f"executed FLOPs 384 (got {fc.executed_flops})")

    for argv, expect in (
        (["estimate", "--params", "7e9", "--gpu", "H100 SXM", "--tokens-per-sec", "3000"], "MFU:"),
        (["gpus", "--detect"], "no CUDA/ROCm device"),
    ):
        exe = Path(sys.executable).parent / "mfu-tracker"
        proc = subprocess.run([str(exe), *argv], capture_output=True, text=True, timeout=300)
        ok = proc.returncode == 0 and expect in proc.stdout + proc.stderr
        check(ok, f"mfu-tracker {' '.join(argv)}" + ("" if ok else
              f" (rc {proc.returncode}: {proc.stdout[-500:]}{proc.stderr[-500:]})"))
    print(f"install smoke: all passed ({args.expect})")


if __name__ == "__main__":
    main()
