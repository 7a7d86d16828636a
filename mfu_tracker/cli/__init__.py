"""The ``mfu-tracker`` command line (also ``python -m mfu_tracker``).

Owns the commands (:mod:`._main`: the parser, ``gpus``, ``estimate``,
``profile``, ``build-ext``), a model built and counted on the meta device
for them (:mod:`._model`), the report's picture (:mod:`._report`) and the
machine check (:mod:`.doctor`).

Layer 7, the top (peaks -> flops -> timing -> distributed -> tracker ->
integrations -> cli). May import every layer; none imports it.
"""
from ._main import main

__all__ = ["main"]
