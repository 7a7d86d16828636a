"""The command line's framework-convention flags, shared by ``estimate`` and
``explain``: ``--quick-geglu on|off`` (Megatron-LM's flag) and the
``convention=`` argument it makes."""
from __future__ import annotations

from typing import Any, List, Optional

__all__: List[str] = []


def convention_spec(name: Optional[str], quick_geglu: Optional[str]) -> Any:
    """``transformer_flops``'s ``convention=``: the preset name, or megatron
    with its quick_geglu option when ``--quick-geglu`` was given."""
    if quick_geglu is None or name is None or name.lower() != "megatron":
        return name
    return {"name": "megatron", "quick_geglu": quick_geglu == "on"}


def add_quick_geglu(parser: Any) -> None:
    """``--quick-geglu on|off``: whether the Megatron-LM run used
    --quick-geglu (its formula then counts 2 MLP matrices, not 3)."""
    parser.add_argument("--quick-geglu", choices=["on", "off"],
                        help="with --convention megatron: the run used --quick-geglu (the "
                        "formula counts 2 MLP matrices, not 3); default on for gpt_oss, as "
                        "Megatron-LM's gpt-oss recipes run it, off otherwise")
