"""The startup hook of ``mfu-tracker run`` (docs/run.md, "How it gets in").

The launcher puts this file's directory first on ``PYTHONPATH``, so Python's
``site`` module runs it at every interpreter's start, in every process the
command starts. It uses the standard library only and does three things:

1. without ``MFU_TRACKER_RUN`` in the environment: nothing but step 3;
2. with it: a finder at the head of ``sys.meta_path`` waits for ``import
   torch``; right after torch's own ``__init__`` has run it gives torch its
   loader back and arms the agent (``mfu_tracker.agent._arm``). An
   interpreter that never imports torch never imports mfu_tracker;
3. the ``sitecustomize`` this one shadows (the next on ``sys.path``), if
   any, runs as it would have, under its own name.

Nothing here raises into the interpreter's start for its own sake: a
failure to arm prints one line on stderr and the program runs unmeasured.
"""
import importlib.machinery
import importlib.util
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_ENV_VAR = "MFU_TRACKER_RUN"   # mfu_tracker.agent._config.ENV_VAR


def _say(message):
    try:
        sys.stderr.write(f"mfu-tracker run: {message}\n")
    except Exception:  # noqa: BLE001 -- no stderr: nothing to tell
        pass


def _arm():
    try:
        from mfu_tracker.agent._arm import arm
    except Exception as error:  # noqa: BLE001 -- another environment, a broken install
        _say(f"{sys.executable} cannot import mfu_tracker ({error!r}); this process is "
             "not measured")
        return
    arm()   # never raises


class _ArmAfter:
    """torch's loader, with the agent armed once its ``exec_module`` returned;
    every other attribute is the loader's own."""

    def __init__(self, loader):
        self._loader = loader

    def __getattr__(self, name):
        return getattr(self._loader, name)

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)   # torch's __init__: its errors are the program's
        spec = getattr(module, "__spec__", None)
        if spec is not None and spec.loader is self:
            spec.loader = self._loader
        if getattr(module, "__loader__", None) is self:
            module.__loader__ = self._loader
        _arm()


class _TorchWatcher:
    """A meta-path finder that answers for ``torch`` once, with the spec the
    other finders give and torch's loader wrapped by :class:`_ArmAfter`."""

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        _unwatch()
        for finder in list(sys.meta_path):
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if find is not None else None
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _ArmAfter(spec.loader)
                return spec
        return None


_WATCHER = _TorchWatcher()


def _unwatch():
    try:
        sys.meta_path.remove(_WATCHER)
    except ValueError:
        pass


def _watch():
    if os.environ.get(_ENV_VAR) is None:
        return
    if "torch" in sys.modules:      # imported before us (a .pth file): arm now
        _arm()
    else:
        sys.meta_path.insert(0, _WATCHER)


def _chain():
    """Run the ``sitecustomize`` this file shadows, as ``sitecustomize``."""
    path = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)   # its errors are reported by site, as without us


try:
    _watch()
finally:
    _chain()
