"""Post-training figures by role for TRL's trainers: :class:`RolesCallback`.

::

    trainer = GRPOTrainer(model=..., reward_funcs=..., args=..., train_dataset=...)
    trainer.add_callback(RolesCallback(trainer))     # peak_tflops= / spec= off the table
    trainer.train()          # role/rollout/mbu, role/learner/mfu, wait_ratio, ... in the logs

The callback times each role of a step on a :class:`~mfu_tracker.Roles`
and puts the window's figures (``role/<role>/...``, ``wait_ratio``,
``mfu_end_to_end``, the waterfall; ``docs/post-training.md``) into the
Trainer's log dict at its logging steps. The roles, for ``GRPOTrainer``:

* ``rollout``: ``_generate`` (transformers' ``generate()`` under
  :class:`~mfu_tracker.GenerationCounter`: exact FLOPs; the bytes, prefill
  and decode, from :func:`~mfu_tracker.generation_flops` on the prompts' and
  completions' real lengths; tokens: the completions'). A generation the
  counter does not see (vLLM) is counted analytically.
* ``weight_sync``: vLLM's ``sync_weights`` (bytes: the policy's parameters).
* ``reference``: the reference model's forward (its module hooks).
* ``reward``: ``_calculate_rewards`` when a reward function is a model; a
  reward computed by a rule on the host is no role (the devices' wait).
* ``learner``: ``training_step`` to the step's end -- the loss's forward and
  backward, the optimizer -- less the rest of ``_prepare_inputs`` (which
  runs inside it and is no role: its generation, reference and reward are
  their own roles); the policy's own no-grad forward there (old log-probs)
  is the learner's.

``DPOTrainer`` is one role, ``learner``, with its reference forward as
``reference`` when it runs one (not with ``precompute_ref_log_probs``).

The hooks are the methods above, wrapped on the trainer instance (an
attribute that shadows the class's method, removed at the end of training),
and the models' forward hooks. The methods are looked up first: a TRL whose
names changed gets one warning and no role keys, never a failed run.
Evaluation is not timed: its time is in the next step's wait.

Layer 7; the only module that imports ``trl``.
"""
from __future__ import annotations

import functools
import warnings
from typing import Any, Callable, Dict, List, Optional

from transformers import TrainerCallback

from .._validate import check_prefix
from ..flops._generation import generation_flops
from ..flops._generation_count import GenerationCounter
from ..tracker import Roles, Tracker
from ._role_stack import RoleStack
from .hf_trainer import trainer_dtype

__all__ = ["RolesCallback"]

#: The methods each trainer's roles need, by trainer class name.
_GRPO_METHODS = ("training_step", "_prepare_inputs", "_generate", "_calculate_rewards")
_DPO_METHODS = ("training_step",)


def _kind(trainer: Any) -> str:
    from trl import DPOTrainer, GRPOTrainer

    if isinstance(trainer, GRPOTrainer):
        return "grpo"
    if isinstance(trainer, DPOTrainer):
        return "dpo"
    raise TypeError("RolesCallback: trainer must be a trl GRPOTrainer or DPOTrainer, "
                    f"not {type(trainer).__name__}")


def _is_module(obj: Any) -> bool:
    import torch

    return isinstance(obj, torch.nn.Module)


def _real_tokens(args: tuple, kwargs: Dict[str, Any]) -> Optional[float]:
    mask = kwargs.get("attention_mask")
    if mask is not None:
        return float(mask.sum())
    ids = kwargs.get("input_ids", args[0] if args else None)
    return float(ids.numel()) if ids is not None else None


class RolesCallback(TrainerCallback):
    """Per-role figures of a TRL ``GRPOTrainer`` or ``DPOTrainer`` (module
    docstring).

    Args:
        trainer: the trainer this callback is added to.
        metric_prefix: key prefix ("" for bare ``role/rollout/mbu``, ...).
        window: optimizer steps the figures cover (default: the Trainer's
            logging steps).
        warmup: first optimizer steps left out.
        dtype: the peak's dtype (None: the Trainer's mixed precision, else
            the model's parameter dtype).
        spec, peak_tflops, clock, device, log_path: the
            :class:`~mfu_tracker.Tracker`'s.

    Configuration errors raise here, naming the argument; during training a
    failing hook gives one warning and the role keys are left out.
    """

    def __init__(self, trainer: Any, *, metric_prefix: str = "", window: Optional[int] = None,
                 warmup: int = 1, dtype: Any = None, spec: Any = None,
                 peak_tflops: Optional[float] = None, clock: str = "auto", device: Any = None,
                 log_path: Any = None) -> None:
        self.kind = _kind(trainer)
        self.trainer = trainer
        self.prefix = check_prefix(metric_prefix, "metric_prefix")
        args = trainer.args
        self.tracker = Tracker(
            dtype=dtype if dtype is not None else trainer_dtype(args, trainer.model),
            window=window if window is not None else max(int(args.logging_steps), 1),
            warmup=warmup, spec=spec, peak_tflops=peak_tflops, clock=clock, device=device,
            log_path=log_path)
        self.roles = Roles(self.tracker)
        self._stack = RoleStack(self.roles, self.roles.now,
                                counted=("learner", "reference", "reward"))
        self._undo: List[Callable[[], None]] = []
        self._warned: set = set()
        self._broken = False
        self._started = False

    # ---- failures --------------------------------------------------------------

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            warnings.warn(f"mfu_tracker: RolesCallback: {message}", RuntimeWarning, stacklevel=3)

    def _fail(self, where: str, error: BaseException) -> None:
        self._broken = True
        self._stack.abandon()
        self._warn_once("failed", f"{where} failed ({error!r}); the role keys are left out")

    def _active(self) -> bool:
        return (self._started and not self._broken
                and bool(getattr(self.trainer.model, "training", False)))

    def _guard(self, where: str, action: Callable[[], Any]) -> Any:
        try:
            return action()
        except Exception as error:  # noqa: BLE001 -- never raise into training
            self._fail(where, error)
            return None

    # ---- installing the hooks --------------------------------------------------

    def _missing(self) -> List[str]:
        names = _GRPO_METHODS if self.kind == "grpo" else _DPO_METHODS
        return [n for n in names if not callable(getattr(type(self.trainer), n, None))]

    def _wrap(self, owner: Any, name: str, around: Callable[..., Any]) -> None:
        """``owner.name`` becomes ``around(original, *args, **kwargs)``."""
        original = getattr(owner, name)

        @functools.wraps(original)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            return around(original, *args, **kwargs)

        setattr(owner, name, wrapper)
        self._undo.append(lambda: owner.__dict__.pop(name, None))

    def _hook_module(self, module: Any, before: Callable[..., bool]) -> None:
        """``before(args, kwargs)`` at each forward of ``module``: True when
        it pushed a frame, popped when the forward ends."""
        pushed: List[bool] = []

        def pre(_module: Any, args: tuple, kwargs: Dict[str, Any]) -> None:
            pushed.append(bool(self._guard("a forward hook", lambda: before(args, kwargs))))

        def post(_module: Any, args: tuple, kwargs: Dict[str, Any], output: Any) -> None:
            if pushed and pushed.pop() and self._stack is not None and not self._broken:
                self._guard("a forward hook", self._stack.pop)

        handles = [module.register_forward_pre_hook(pre, with_kwargs=True),
                   module.register_forward_hook(post, with_kwargs=True, always_call=True)]
        self._undo.extend(h.remove for h in handles)

    def _install(self) -> None:
        trainer = self.trainer
        missing = self._missing()
        if missing:
            self._warn_once("methods", f"{type(trainer).__name__} has no {', '.join(missing)} "
                            "(TRL's names changed?): the roles cannot be timed and their keys "
                            "are left out")
            self._broken = True
            return
        self._wrap(trainer, "training_step", self._learner)
        self._hook_module(trainer.model, self._policy_forward)
        ref = getattr(trainer, "ref_model", None)
        if _is_module(ref):
            self._hook_module(ref, self._reference_forward)
        if self.kind == "grpo":
            self._wrap(trainer, "_prepare_inputs", self._no_role)
            self._wrap(trainer, "_generate", self._rollout)
            self._wrap(trainer, "_calculate_rewards", self._reward)
            sync = getattr(getattr(trainer, "vllm_generation", None), "sync_weights", None)
            if getattr(trainer, "use_vllm", False) and callable(sync):
                self._wrap(trainer.vllm_generation, "sync_weights", self._weight_sync)

    # ---- the roles -------------------------------------------------------------

    def _timed(self, role: Optional[str], original: Callable[..., Any], *args: Any,
               **kwargs: Any) -> Any:
        if not self._active():
            return original(*args, **kwargs)
        self._guard("push", lambda: self._stack.push(role))
        try:
            return original(*args, **kwargs)
        finally:
            if not self._broken:
                self._guard("pop", self._stack.pop)

    def _no_role(self, original: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return self._timed(None, original, *args, **kwargs)

    def _weight_sync(self, original: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if self._active():
            self._guard("weight_sync", lambda: self.roles.add("weight_sync", bytes=float(sum(
                p.numel() * p.element_size() for p in self.trainer.model.parameters()))))
        return self._timed("weight_sync", original, *args, **kwargs)

    def _reward(self, original: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        models = any(_is_module(f) for f in getattr(self.trainer, "reward_funcs", ()) or ())
        return self._timed("reward" if models else None, original, *args, **kwargs)

    def _learner(self, original: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """A micro-batch's training step; the learner's turn lasts to the
        step's end (clipping, the optimizer), paused by the roles inside."""
        if self._active() and self._stack.top != "learner":
            self._guard("push", lambda: self._stack.push("learner"))
        return original(*args, **kwargs)

    def _policy_forward(self, args: tuple, kwargs: Dict[str, Any]) -> bool:
        if not self._active():
            return False
        import torch

        stack = self._stack
        if stack.top is None and stack.depth > 0:   # inside _prepare_inputs: old log-probs
            stack.push("learner")
            return True
        if stack.top == "learner" and torch.is_grad_enabled():
            tokens = _real_tokens(args, kwargs)
            if tokens is not None:
                stack.add_tokens("learner", tokens)
        return False

    def _reference_forward(self, args: tuple, kwargs: Dict[str, Any]) -> bool:
        if not self._active() or self._stack.top == "reference":
            return False
        self._stack.push("reference")
        tokens = _real_tokens(args, kwargs)
        if tokens is not None:
            self._stack.add_tokens("reference", tokens)
        return True

    def _generation_model(self) -> Any:
        model = self.trainer.accelerator.unwrap_model(self.trainer.model)
        base = getattr(model, "get_base_model", None)     # PEFT: the model that forwards
        return base() if callable(base) else model

    def _rollout(self, original: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if not self._active():
            return original(*args, **kwargs)
        gen = self._guard("rollout", lambda: GenerationCounter(self._generation_model()))
        if gen is None:
            return original(*args, **kwargs)
        self._guard("push", lambda: self._stack.push("rollout"))
        gen.__enter__()
        try:
            result = original(*args, **kwargs)
        finally:
            gen.__exit__(None, None, None)
            if not self._broken:
                self._guard("pop", self._stack.pop)
        self._guard("rollout", lambda: self._book_rollout(gen.count, result))
        return result

    def _book_rollout(self, count: Any, result: Any) -> None:
        """The rollout's FLOPs (the counter's; analytic when it saw no
        forward), its bytes (analytic, on the real lengths) and tokens."""
        prompt_lens = [len(ids) for ids in result[0]]
        output_lens = [len(ids) for ids in result[1]]
        analytic = None
        if getattr(self.trainer, "tools", None):
            self._warn_once("tools", "a generation with tool calls is several generate() calls: "
                            "the rollout's bytes are left out")
        elif prompt_lens and min(prompt_lens + output_lens) >= 1:
            model = self._generation_model()
            dtype = next(model.parameters()).dtype
            try:
                analytic = generation_flops(model.config, prompt_lens=prompt_lens,
                                            output_lens=output_lens, dtype=dtype)
            except (TypeError, ValueError) as error:
                self._warn_once("analytic", f"generation_flops: {error}; the rollout's bytes "
                                "are left out")
        if count.prefill_forwards:
            flops: Optional[float] = count.model_flops
        else:
            flops = None if analytic is None else analytic.prefill_flops + analytic.decode_flops
        nbytes = None if analytic is None else analytic.prefill_bytes + analytic.decode_bytes
        self.roles.add("rollout", flops=flops, bytes=nbytes, tokens=float(sum(output_lens)))

    # ---- the Trainer's events --------------------------------------------------

    def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None,
                       **kwargs: Any) -> None:
        self._guard("on_train_begin", self._install)

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if not self._started and not self._broken:
            self._guard("on_step_begin", self.roles.start)
            self._started = not self._broken

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._started and not self._broken:
            self._guard("on_step_end", lambda: (self._stack.close(), self.roles.step()))

    def on_log(self, args: Any, state: Any, control: Any, logs: Optional[Dict[str, Any]] = None,
               **kwargs: Any) -> None:
        if logs is None or not self._started or self._broken:
            return
        out = self._guard("on_log", lambda: self.roles.metrics(self.prefix))
        if not out:
            return
        logs.update(out)
        history = getattr(state, "log_history", None)
        if history and history[-1].get("step") == state.global_step:
            history[-1].update(out)    # the Trainer copied logs there before on_log

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._stack.abandon()
        while self._undo:
            self._guard("on_train_end", self._undo.pop())
        self._guard("on_train_end", self.tracker.close)
