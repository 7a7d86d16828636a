"""The ``mfu-tracker`` command line (also ``python -m mfu_tracker``).

Owns the commands (:mod:`._main`: the parser, ``estimate``, ``profile``,
``build-ext``; :mod:`._gpus`: ``gpus``; :mod:`._goodput`: ``goodput``;
:mod:`._passport`: ``passport``, :func:`passport` for a launcher; :mod:`.view`:
``view``, the live page), a
model built and counted on the meta device for them (:mod:`._model`), the
flags' value checks (:mod:`._flag_types`), the ``--gpu`` / ``--peak-tflops``
peak in the command line's words (:mod:`._peak_flags`), the report's picture
(:mod:`.report`, one module per panel) and the machine check (:mod:`.doctor`).

Layer 8, the top (peaks -> flops -> timing -> distributed -> job -> tracker ->
integrations -> cli). May import every layer; none imports it.
"""
from ._main import main
from ._passport import passport

__all__ = ["main", "passport"]
