"""How the counter sees ops and modules (docs/dispatch_keys.md): only while a counter is
active, only on its thread, and nothing is left behind when it stops. No
timing here (benchmarks/counter_overhead.py measures the cost)."""
from __future__ import annotations

import gc
import threading

import pytest
import torch

from mfu_tracker.counter import (
    FlopCounter,
    counter_backend,
    register_flop_formula,
    unregister_flop_formula,
)

ORIGINAL_CALL = torch.nn.Module.__call__


def _key_included() -> bool:
    # the key csrc/torch/kernels.cpp counts on (not in Python's DispatchKey enum)
    return "TESTING_ONLY_GenericMode" in repr(torch._C._dispatch_tls_local_include_set())


@pytest.mark.skipif(counter_backend() != "torch-ext", reason="the C++ observer's dispatch key")
def test_the_counting_key_stays_on_a_thread_while_its_counter_lives():
    """The key is off on a thread that never counted, and stays on after its
    first count while the counter lives: torch.compile's guards hash a
    thread's included dispatch keys into every tensor check, so switching it
    per count would recompile a compiled model between counted and uncounted
    calls (tests/flops/counter/test_compiled.py). Outside a count the kernel passes ops on
    uncounted; with no counter alive the key is off (test_dispatch_keys.py)."""
    seen: dict[str, object] = {}

    def fresh_thread() -> None:
        a = torch.randn(4, 5)
        seen["before"] = _key_included()
        with FlopCounter(modules=False) as fc:
            seen["inside"] = _key_included()
            torch.mm(a, a.t())
        seen["after"] = _key_included()
        torch.mm(a, a.t())  # outside any count: nothing counts it
        with FlopCounter(modules=False) as outer:
            try:
                with FlopCounter(modules=False):
                    raise KeyError("boom")
            except KeyError:
                pass
            torch.mm(a, a.t())
        seen["flops"] = (fc.executed_flops, outer.executed_flops)
        del fc, outer
        seen["none alive"] = _key_included()

    t = threading.Thread(target=fresh_thread)
    t.start()
    t.join()
    # 2 * 4 * 5 * 4 = 160 per mm
    assert seen == {"before": False, "inside": True, "after": True, "flops": (160, 160),
                    "none alive": False}


def test_module_call_is_restored_and_other_threads_are_not_attributed():
    gc.collect()  # counters of earlier tests
    assert torch.nn.Module.__call__ is ORIGINAL_CALL
    lin = torch.nn.Linear(8, 4)
    x = torch.randn(2, 8)
    seen: dict[str, object] = {}

    def other_thread() -> None:
        lin(x)  # a module call on a thread without a counter: not attributed
        with FlopCounter(modules=True) as inner:
            lin(x)
        seen["inner"] = inner.by_module

    with FlopCounter(modules=True) as fc:
        assert torch.nn.Module.__call__ is not ORIGINAL_CALL
        t = threading.Thread(target=other_thread)
        t.start()
        t.join()
        lin(x)
    fwd = 2 * 2 * 8 * 4
    assert {k: (v.forward_flops, v.calls) for k, v in fc.by_module.items()} == {"Linear": (fwd, 1)}
    assert {k: (v.forward_flops, v.calls)
            for k, v in seen["inner"].items()} == {"Linear": (fwd, 1)}  # type: ignore[union-attr]
    # the wrapper stays while a counter with a module table lives (no
    # per-block swap), and goes at the first module call after the last one
    seen.clear()
    del fc
    gc.collect()
    lin(x)
    assert torch.nn.Module.__call__ is ORIGINAL_CALL


def test_module_wrapper_is_installed_once_for_a_new_table_per_step():
    """A loop making a new FlopCounter(modules=True) each step swaps
    Module.__call__ once, not twice a step (each swap invalidates every
    module class's attribute cache); a counter without a table, or the first
    module call after the last table is gone, puts it back."""
    gc.collect()
    lin = torch.nn.Linear(8, 4)
    x = torch.randn(2, 8)
    lin(x)  # a wrapper left by earlier tests' counters goes now
    assert torch.nn.Module.__call__ is ORIGINAL_CALL
    fwd = 2 * 2 * 8 * 4
    for _ in range(5):
        with FlopCounter(modules=True) as fc:
            lin(x)
        assert fc.by_module["Linear"].forward_flops == fwd
        del fc  # the table is gone before the next step's counter starts
        gc.collect()
        assert torch.nn.Module.__call__ is not ORIGINAL_CALL  # not put back between steps
    with FlopCounter() as plain:  # a counter without a table puts it back first
        assert torch.nn.Module.__call__ is ORIGINAL_CALL
        lin(x)
    assert plain.forward_flops == fwd


def test_nested_module_tables_and_reset():
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Linear(8, 2))
    x = torch.randn(3, 8)
    outer = FlopCounter(modules=True)
    with outer:
        model(x)
        with FlopCounter(modules=True) as inner:
            model(x)
        outer.reset()
        model(x)
    first, second = 2 * 3 * 8 * 8, 2 * 3 * 8 * 2
    for fc in (outer, inner):
        rows = {k: (v.forward_flops, v.calls) for k, v in fc.by_module.items()}
        assert rows == {"Sequential": (first + second, 1), "Sequential.0": (first, 1),
                        "Sequential.1": (second, 1)}


def test_a_formula_registered_while_counting_counts_from_then_on():
    lib = "mfu_kernels_test"
    torch.library.define(f"{lib}::twice", "(Tensor x) -> Tensor")

    @torch.library.impl(f"{lib}::twice", "CompositeExplicitAutograd")
    def _twice(x):
        return x * 2

    x = torch.randn(3, 4)
    op = getattr(torch.ops, lib).twice
    try:
        with FlopCounter(modules=False) as fc:
            op(x)  # no formula yet: not counted
            register_flop_formula(f"{lib}::twice", lambda shape: shape[0] * shape[1])
            op(x)
            op(x)
        assert fc.by_op == {f"{lib}::twice": (2, 24)}
        assert fc.flops_by_dtype == {"fp32": 24}
    finally:
        unregister_flop_formula(f"{lib}::twice")


def test_overloads_of_one_op_count_under_its_name():
    a, b = torch.randn(4, 5), torch.randn(5, 6)
    out = torch.empty(4, 6)
    with FlopCounter(modules=False) as fc:
        torch.mm(a, b)
        torch.mm(a, b, out=out)  # aten::mm.out
    assert fc.by_op == {"aten::mm": (2, 2 * (2 * 4 * 5 * 6))}


def test_module_rows_add_each_name_into_the_names_it_is_inside(monkeypatch):
    """module_rows (linear: a table read every step) against its definition
    written out: a row's FLOPs are its own plus those of every name that
    starts with it and a dot; calls are its own; first-call order kept."""
    import random

    from mfu_tracker.flops.counter import _module_table

    def by_definition(per_token: dict, names: list) -> dict:
        own: dict = {}
        for token in sorted(per_token):
            row = own.setdefault(names[token], [0, 0, 0])
            for i, value in enumerate(per_token[token]):
                row[i] += value
        return {name: [sum(r[0] for o, r in own.items() if o == name or o.startswith(name + ".")),
                       sum(r[1] for o, r in own.items() if o == name or o.startswith(name + ".")),
                       calls] for name, (_, _, calls) in own.items()}

    rng = random.Random(0)
    parts = ["Root", "layers", "0", "1", "mlp", "Rootx", "layers.1x"]
    for _ in range(200):
        names = [""] + [".".join(rng.choice(parts) for _ in range(rng.randint(1, 4)))
                        for _ in range(rng.randint(1, 20))]
        monkeypatch.setattr(_module_table, "_names", names)
        per_token = {rng.randint(1, len(names) - 1): (rng.randint(0, 9), rng.randint(0, 9),
                                                       rng.randint(0, 3))
                     for _ in range(len(names))}
        got = _module_table.module_rows(per_token)
        want = by_definition(per_token, names)
        assert got == want and list(got) == list(want)
