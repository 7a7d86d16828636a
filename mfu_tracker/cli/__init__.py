"""The ``mfu-tracker`` command line (also ``python -m mfu_tracker``).

Owns the commands (:mod:`._main`: the parser, ``estimate``, ``profile``,
``build-ext``; :mod:`._gpus`: ``gpus``; :mod:`._goodput`: ``goodput``;
:mod:`._passport`: ``passport``, :func:`passport` for a launcher; :mod:`.view`:
``view``, the live page), a
model built and counted on the meta device for them (:mod:`._model`), the
flags' value checks (:mod:`._flag_types`), the ``--gpu`` / ``--peak-tflops``
peak in the command line's words (:mod:`._peak_flags`), the report's picture
(:mod:`.report`, one module per panel), the machine check (:mod:`.doctor`) and
``run``, the launcher of an unmodified script (:mod:`._run`: its flags; :mod:`._launch`:
the child, its environment, signals and exit status).

Layer 11, the top (peaks -> flops -> timing -> device -> breakdown ->
distributed -> job -> tracker -> integrations -> agent -> cli). May import every
layer; none imports it.
"""
from ._main import main
from ._passport import passport

__all__ = ["main", "passport"]
