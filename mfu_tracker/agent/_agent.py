"""The agent: an unmodified training loop measured from torch's global hooks.

The agent is one more adapter of the integrations' callback core
(:class:`~mfu_tracker.integrations._callback.CallbackCore`): the step tracker,
its log, the one step-FLOPs policy and the phase marks are the ones a
``MFUCallback`` drives; only the events differ. They come from hooks torch
offers to every program (docs/run.md, "How steps are found"):

* **The root** -- the outermost call of a module with trainable parameters,
  in training mode, with grad on -- is found by a global forward pre-hook
  (``register_module_forward_pre_hook``), with a global forward hook keeping
  the call depth. Once found, the global hooks are removed (they put every
  module call on torch's slow path) and the root gets hooks of its own.
* **A step begins** at the root's first training forward after a boundary:
  the step's record opens and its FLOP counter starts (the first one also
  builds the tracker and starts its clock).
* **A step ends** at an optimizer's step (``register_optimizer_step_pre_hook``
  stops the counter, ``register_optimizer_step_post_hook`` draws the
  boundary). Gradient accumulation needs no rule: everything between two
  boundaries is one step. Several optimizers stepping together are one
  step: a post-hook with no training forward since the last boundary joins
  it, unless the same optimizer steps a second time -- then it is a new step
  whose forward the agent could not see (timed; FLOPs and tokens unknown), and
  the root is looked for again.
* ``mfu_tracker.end_step()`` draws the boundaries instead, from its first call.
* Every ``log_every`` steps the window's figures are formed (a collective
  when distributed: every rank logs at the same step) and written to the log.

A forked child (a DataLoader worker) inherits the hooks and stays silent:
only the process that armed the agent measures. Nothing here raises into
the program: every hook runs under :func:`probe`,
which turns a failure into one line on stderr and stops the agent, and
catches warnings the package raises there (``-W error`` would make them
exceptions) to print them instead. No hook synchronizes a device or
allocates on one (the inputs are read by shape; a mask only on the CPU).
"""
from __future__ import annotations

import functools
import os
import sys
import warnings
from typing import Any, Callable, Dict, List, Optional, Set, TypeVar

from ..integrations._callback import CallbackCore
from ..integrations._step_flops import StepRecord
from ..integrations._step_record import read_tokens
from ._config import RunConfig
from ._detected import detected_line, end_report
from ._inputs import call_kwargs, detect_dtype, token_ids, token_inputs
from ._say import say, say_warning

F = TypeVar("F", bound=Callable[..., Any])


def probe(hook: F) -> F:
    """An agent hook that never raises: a failure stops the agent with one
    line; the package's warnings are printed, never raised; returns None
    (a forward pre-hook that returned something would change the inputs)."""

    @functools.wraps(hook)
    def guarded(self: "Agent", *args: Any) -> None:
        if self.stopped is not None or os.getpid() != self.pid:
            return      # stopped, or a forked child (a DataLoader worker): not measured
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    hook(self, *args)
                finally:
                    for warning in caught:
                        say_warning(warning.message)
        except Exception as error:  # noqa: BLE001 -- never raise into the program
            self.fail(hook.__name__, error)

    return guarded  # type: ignore[return-value]


#: The start of the warning ``torch.compile(model)``'s wrapper gives at each
#: call while a global module hook exists (torch/_dynamo/eval_frame.py).
_GLOBAL_HOOKS_WARNING = r"Using `torch\.compile\(module\)` when there are global hooks"


def _trains(module: Any) -> bool:
    return any(p.requires_grad for p in module.parameters())


def model_info_of(module: Any, args: Any, kwargs: Any, counted: bool) -> Dict[str, Any]:
    """What the run record says of the model (docs/run.md): its transformers
    config when the root module carries one (the live page's range of the
    frameworks' formulas needs it), the sequence length when the first
    forward's tokens (positional or keyword, :func:`._inputs.token_inputs`'s
    order) are a 2-D integer tensor, and how the FLOPs were obtained."""
    info: Dict[str, Any] = {"flops": "counted" if counted else "declared"}
    from ..job._model_info import check_model_info

    config = getattr(module, "config", None)
    if config is not None and callable(getattr(config, "to_dict", None)):
        try:
            check_model_info({"config": config})
            info["config"] = config
        except (TypeError, ValueError):     # a config that is not a transformers one
            pass
    ids, _ = token_ids(args, kwargs)
    if ids is not None and ids.dim() == 2 and ids.shape[-1] > 0:
        info["seq_len"] = int(ids.shape[-1])
    return info


class Agent(CallbackCore):
    """The in-process measurement of ``mfu-tracker run`` (module docstring)."""

    def __init__(self, config: RunConfig) -> None:
        given = config.flops_per_step is not None
        super().__init__(dtype=config.dtype, peak_tflops=config.peak_tflops,
                         count_every=0 if given else config.count_every,
                         window=config.log_every, warmup=config.warmup,
                         log_path=config.log_path)
        self.config = config
        self.pid = os.getpid()                  # a fork's copy of the agent stays silent
        self.stopped: Optional[str] = None      # why the agent stopped (None: running)
        self.root: Any = None                   # the module whose forward begins a step
        self.inputs_source: Optional[str] = None  # where the first step's tokens came from
        self.dtype_source = "--dtype" if config.dtype is not None else ""
        self.training_forwards = 0              # root forwards seen
        self.optimizer_steps = 0                # optimizer steps seen
        self.blind_steps = 0                    # steps with no visible forward
        self._global: List[Any] = []            # the optimizer hooks
        self._discovery: List[Any] = []         # the global module hooks, while looking
        self._filter: Any = None                # the warning filter, while looking
        self._root_hooks: List[Any] = []
        self._depth = 0                         # module call depth, while looking
        self._forward_seen = False              # a root forward since the last boundary
        self._stepped: Set[int] = set()         # optimizers that stepped since then
        self._explicit = False                  # end_step() draws the boundaries
        self._explicit_last = False             # the last boundary was end_step()'s
        self._detected = False                  # the detection line was printed

    # ---- installing -----------------------------------------------------------------

    def install(self) -> None:
        """Register the optimizer hooks and start looking for the root."""
        from torch.optim.optimizer import (
            register_optimizer_step_post_hook,
            register_optimizer_step_pre_hook,
        )

        from ..flops.counter._compiled import run_eagerly

        # under torch.compile(model) the hooks run eagerly, never compiled
        run_eagerly(Agent._discover, Agent._discover_end, Agent._root_begins, Agent._root_ends)
        self._global = [register_optimizer_step_pre_hook(self._optimizer_begins),
                        register_optimizer_step_post_hook(self._optimizer_ends)]
        self._look()

    def _look(self) -> None:
        from torch.nn.modules.module import (
            register_module_forward_hook,
            register_module_forward_pre_hook,
        )

        if not self._discovery:
            self._depth = 0
            self._discovery = [register_module_forward_pre_hook(self._discover),
                               register_module_forward_hook(self._discover_end, always_call=True)]
            # torch.compile(model)'s wrapper warns at each call while any global
            # module hook exists (ours, now): in the program's own call, where
            # -W error would make it an exception. Silenced while ours exist.
            warnings.filterwarnings("ignore", message=_GLOBAL_HOOKS_WARNING, category=UserWarning)
            self._filter = warnings.filters[0]

    def _stop_looking(self) -> None:
        handles, self._discovery = self._discovery, []
        for handle in handles:
            handle.remove()
        entry, self._filter = self._filter, None
        if entry is not None and entry in warnings.filters:
            warnings.filters.remove(entry)
            getattr(warnings, "_filters_mutated", lambda: None)()

    def remove_hooks(self) -> None:
        """Remove every hook the agent registered."""
        self._stop_looking()
        handles = self._global + self._root_hooks
        self._global, self._root_hooks = [], []
        for handle in handles:
            handle.remove()

    def fail(self, where: str, error: BaseException) -> None:
        """A probe failed: say so (every rank), remove the hooks, close the run."""
        self.stopped = f"{where} failed ({error!r})"
        say(f"the agent stopped: {self.stopped}; the program goes on unmeasured from here",
            every_rank=True)
        counter, self._counter, self._step = self._counter, None, None
        try:
            if counter is not None:     # a step's count left running would hold its slot
                counter.stop()
            self.remove_hooks()
            if self._tracker is not None and not self._tracker.closed:
                self._tracker.close()
        except Exception:  # noqa: BLE001 -- already stopping
            pass

    def _warn_once(self, key: str, message: str) -> None:
        # the callback core's warnings, as the agent's lines
        if key not in self._warned:
            self._warned.add(key)
            say_warning(message)

    # ---- the root --------------------------------------------------------------------

    @probe
    def _discover(self, module: Any, args: Any) -> None:
        import torch

        if torch.compiler.is_compiling():
            return
        depth, self._depth = self._depth, self._depth + 1
        if depth == 0 and module.training and torch.is_grad_enabled() and _trains(module):
            self._found(module, args)

    @probe
    def _discover_end(self, module: Any, args: Any, output: Any) -> None:
        import torch

        if not torch.compiler.is_compiling():
            self._depth = max(0, self._depth - 1)

    def _found(self, module: Any, args: Any) -> None:
        """``module`` is the root: hooks of its own, the global ones removed."""
        self._stop_looking()
        if module is self.root:
            return      # its own pre-hook runs next in this very call
        for handle in self._root_hooks:
            handle.remove()
        self.root = module
        self._root_hooks = [module.register_forward_pre_hook(self._root_begins),
                            module.register_forward_hook(self._root_ends, with_kwargs=True)]
        # this call's pre-hooks were listed before the root's was registered
        self._root_begins(module, args)

    @probe
    def _root_begins(self, module: Any, args: Any) -> None:
        import torch

        if torch.compiler.is_compiling() or not (module.training and torch.is_grad_enabled()):
            return
        self.training_forwards += 1
        if self._tracker is None:
            self._begin(module, args)
        if self._step is None:
            self._open_step()
        elif self._counter is not None:
            # a forward after the optimizer's pre-hook: its closure (Lightning's
            # last micro-batch runs inside optimizer.step(closure))
            self._counter.start()
        self._forward_seen = True
        self._mark("forward")

    @probe
    def _root_ends(self, module: Any, args: Any, kwargs: Any, output: Any) -> None:
        import torch

        if torch.compiler.is_compiling() or not (module.training and torch.is_grad_enabled()):
            return
        record = self._step
        if record is not None:
            inputs, source = token_inputs(args, kwargs)
            if inputs is None:
                record.add_block(None)
            else:
                record.record_inputs((), inputs)
            if self.inputs_source is None:
                self.inputs_source = f"{source} of {type(module).__name__}.forward" if source else \
                    f"no integer tensor among the inputs of {type(module).__name__}.forward"
        self._mark("backward")

    def _begin(self, module: Any, args: Any = ()) -> None:
        """The first training forward (its positional ``args``): the dtype, the
        peak, the tracker, and what the run record says of the model."""
        import atexit

        device = self.device = next(p for p in module.parameters()).device
        dtype = self.dtype
        if dtype is None:
            dtype, self.dtype_source = detect_dtype(module, device)
        config = self.config
        if config.measure_peak and config.peak_tflops is None:
            from ..peaks._measure import measured_gpu_spec

            self.spec = measured_gpu_spec(dtype, device)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            self._start(module, dtype=dtype, window=config.log_every, device=device,
                        flops_per_step=config.flops_per_step, job=config.job,
                        model_info=model_info_of(module, args, call_kwargs(module),
                                                 config.flops_per_step is None))
        for warning in caught:      # the detection line says what the peak lookup warns
            if "no datasheet peak" not in str(warning.message):
                say_warning(warning.message)
        atexit.register(self.finish)   # after the tracker's own: runs before it

    # ---- steps -----------------------------------------------------------------------

    @probe
    def _optimizer_begins(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if self._tracker is not None:
            self._stop_counting()
            self._mark("optimizer")

    @probe
    def _optimizer_ends(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        self.optimizer_steps += 1
        if self._tracker is None:
            return
        self._mark(None)
        key = id(optimizer)
        if self._explicit:
            self._mark("data")
        elif self._forward_seen or key in self._stepped:
            self._boundary(explicit=False)
            self._stepped = {key}
        else:               # another optimizer of the same step
            self._stepped.add(key)
            self._mark("data")

    @probe
    def end_step(self) -> None:
        """``mfu_tracker.end_step()``: a boundary; from now on the only ones."""
        self._explicit = True
        if self._tracker is None:
            return
        if self._forward_seen or self._explicit_last:
            self._boundary(explicit=True)
        self._explicit_last = True

    def _boundary(self, *, explicit: bool) -> None:
        """One step ends: closed (counted or scaled), or blind when no forward
        of the root ran in it; every ``log_every`` steps, a metrics line."""
        record = self._step
        if record is None:
            self._blind(explicit)
        else:
            self._close_step()
        self._forward_seen = False
        self._explicit_last = explicit
        if record is not None and not self._detected:
            self._detected = True
            say(detected_line(self, record))
        if self._steps_done % self.config.log_every == 0:
            self._window_metrics(self._tracker.global_step)

    def _blind(self, explicit: bool) -> None:
        """A step in which no forward of the root ran where the agent sees it
        (another model, a compiled region): timed, its FLOPs and tokens unknown."""
        record = StepRecord()
        self._step, self._counter = record, None
        self._close_step()
        record.reference = record.shares = None   # nothing of it was seen
        self.blind_steps += 1
        self._warned.add("noflops")                # said here, in the agent's words
        what = "end_step() was called twice" if explicit else "an optimizer stepped twice"
        name = type(self.root).__name__ if self.root is not None else "a trained module"
        say(f"{what} with no training forward of {name} in between: such steps are timed, "
            "their FLOPs and tokens are unknown (MFU is left out while one is in the window); "
            "looking for the model again")
        self._look()

    def _book_steps(self) -> None:
        steps = list(self._unbooked)
        config = self.config
        if config.flops_per_step is None:
            super()._book_steps()                       # the step-FLOPs policy's
        else:                                           # the tracker has the FLOPs
            self._unbooked.clear()
            if config.tokens_per_step is None:
                tokens = read_tokens([record for _, record in steps])[0]
                for (step, _), count in zip(steps, tokens):
                    if count is not None:
                        self._tracker.book(step, num_tokens=count)
        if config.tokens_per_step is not None:
            for step, _ in steps:
                self._tracker.book(step, num_tokens=config.tokens_per_step)

    # ---- the end ---------------------------------------------------------------------

    @probe
    def finish(self) -> None:
        """The interpreter exits: the last metrics line (not after a crash of
        a distributed run: the other ranks may never join its collective),
        the run-end record, the hooks removed."""
        tracker = self._tracker
        if tracker is None or tracker.closed:
            return
        self._stop_counting()
        self._step = None                           # a step begun and not ended is no step
        crashed = getattr(sys, "last_value", None) is not None
        from ..distributed._collective import process_group_initialized

        lonely = tracker.distributed and (crashed or not process_group_initialized())
        self._stop(None if lonely else tracker.global_step)
        self.remove_hooks()

    def exit_report(self) -> None:
        """At the interpreter's exit (registered first: runs last): what was
        measured, or why nothing was (rank 0)."""
        if self.stopped is None and os.getpid() == self.pid:
            try:
                message = end_report(self)
                if message:
                    say(message)
            except Exception:  # noqa: BLE001 -- exiting
                pass
