"""argparse ``type=`` converters that check a flag's value when the command
line is parsed -- before any work -- so a bad value is an ``error: argument
--seq-len: ...`` line naming the flag, never a Python argument's name from
deeper down."""
from __future__ import annotations

import argparse
import math
from typing import Callable, List

__all__: List[str] = []


def int_at_least(low: int) -> Callable[[str], int]:
    """An integer >= ``low``."""

    def convert(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer >= {low}, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be an integer >= {low}, got {text}")
        return value

    convert.__name__ = f"int >= {low}"  # argparse names the type in its messages
    return convert


def port(text: str) -> int:
    """A TCP port, 0 to 65535 (0: a free one, chosen when the page is served)."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be a port, 0 to 65535 (0: a free one), "
                                         f"got {text!r}")
    return value


port.__name__ = "port"  # argparse names the type in its messages


def positive_float(text: str) -> float:
    """A finite number > 0 ("7e9", "1.2")."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text}")
    return value


def seq_lens(text: str) -> List[int]:
    """Comma-separated sequence lengths, each >= 1 ("1500,700,2048")."""
    try:
        lengths = [int(p) for p in text.split(",")]
    except ValueError:
        lengths = []
    if not lengths or min(lengths) < 1:
        raise argparse.ArgumentTypeError(
            f"must be comma-separated lengths >= 1, e.g. 1500,700,2048, got {text!r}")
    return lengths


seq_lens.__name__ = "lengths"  # argparse names the type in its messages
