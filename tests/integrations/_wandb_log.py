"""Read a WandB offline run's transaction log (``run-*.wandb``).

wandb >= 0.2x dropped its Python reader (the writer lives in wandb-core), so this
reads the file format directly: a 7-byte header (``:W&B``, magic 0xBEE1, version
0) and then LevelDB log framing -- 32 KiB blocks of records, each a 7-byte header
(crc32c: 4, length: 2 little-endian, type: 1 = FULL, 2 = FIRST, 3 = MIDDLE,
4 = LAST) and its bytes; a block tail shorter than a header is zero padding.
Each whole record is one ``wandb_internal_pb2.Record`` (wandb's own schema).
"""
from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Dict, Iterator, List

BLOCK = 32 * 1024
HEADER = 7


def _payloads(data: bytes) -> Iterator[bytes]:
    if data[:4] != b":W&B":
        raise ValueError("not a wandb transaction log")
    pos, pending = 7, b""
    while pos + HEADER <= len(data):
        left = BLOCK - pos % BLOCK
        if left < HEADER:
            pos += left
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos:pos + HEADER])
        if kind == 0 and length == 0:   # zero padding to the block end
            pos += left
            continue
        body = data[pos + HEADER:pos + HEADER + length]
        pos += HEADER + length
        if kind == 1:
            yield body
        elif kind == 2:
            pending = body
        elif kind == 3:
            pending += body
        elif kind == 4:
            yield pending + body
            pending = b""


def history_rows(path: Path) -> List[Dict[str, object]]:
    """The run's history rows (``wandb.log`` calls) as dicts of decoded values."""
    from wandb.proto import wandb_internal_pb2

    rows = []
    for payload in _payloads(Path(path).read_bytes()):
        record = wandb_internal_pb2.Record()
        record.ParseFromString(payload)
        if record.WhichOneof("record_type") == "history":
            rows.append({(item.key or "/".join(item.nested_key)): json.loads(item.value_json)
                         for item in record.history.item})
    return rows
