"""SSE parser throughput against a naive baseline measured in the same run.

    python benchmarks/bench_sse.py [--mb 20] [--block 4096] [--repeat 5]

The input is a realistic OpenRouter stream (docs/openrouter-api.md 3b: keep-alive comments, ~300-byte chunks
of a few words each, a usage chunk, [DONE]) repeated to ``--mb`` megabytes and fed in ``--block``-byte reads,
as httpx's iter_bytes delivers them.

* tasks.core.wire.sse.SSEParser: any split points, CR/LF/CRLF, multi-line data, bounded memory, bad-frame reporting.
* naive baseline: join everything, ``splitlines()``, ``json.loads`` every ``data:`` line. It needs the whole
  body in memory first, so it cannot stream; it is the floor of what "parse the lines" costs in Python.
* Both do the same JSON work; the report is the parser's overhead beyond it.
* Last line: a ~1 MiB line fed in 256-byte reads (a hostile peer), which must stay linear.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tasks.core.wire.sse import Chunk, SSEParser  # noqa: E402


def _stream_unit() -> bytes:
    parts = [b": OPENROUTER PROCESSING\n\n"]
    words = "*She smiles and sets the lantern on the table.* You came back sooner than I expected".split()
    for i, word in enumerate(words * 3):
        chunk = {
            "id": "gen-1778031306-UD7bR0I1JNCsPvVzlXat",
            "object": "chat.completion.chunk",
            "created": 1778031306,
            "model": "meta-llama/llama-3.3-70b-instruct",
            "provider": "DeepInfra",
            "choices": [
                {
                    "index": 0,
                    "delta": {"content": word + " ", "role": "assistant"},
                    "finish_reason": None,
                    "native_finish_reason": None,
                }
            ],
        }
        parts.append(b"data: " + json.dumps(chunk, separators=(",", ":")).encode() + b"\n\n")
        if i % 20 == 19:
            parts.append(b": OPENROUTER PROCESSING\n\n")
    parts.append(b"data: [DONE]\n\n")
    return b"".join(parts)


def _blocks(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def run_parser(blocks: list[bytes]) -> int:
    parser = SSEParser()
    chunks = 0
    for block in blocks:
        for event in parser.feed(block):
            chunks += isinstance(event, Chunk)
    for event in parser.close():
        chunks += isinstance(event, Chunk)
    return chunks


def run_naive(blocks: list[bytes]) -> int:
    chunks = 0
    for line in b"".join(blocks).decode("utf-8").splitlines():
        if line.startswith("data: ") and line != "data: [DONE]":
            json.loads(line[6:])
            chunks += 1
    return chunks


def best_of(fn: Callable[[list[bytes]], int], blocks: list[bytes], repeat: int) -> tuple[float, int]:
    times = []
    result = 0
    for _ in range(repeat):
        t = time.perf_counter()
        result = fn(blocks)
        times.append(time.perf_counter() - t)
    return min(times), result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, default=20.0)
    ap.add_argument("--block", type=int, default=4096)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    unit = _stream_unit()
    data = unit * max(1, int(args.mb * 1024 * 1024 / len(unit)))
    mb = len(data) / 1024 / 1024
    blocks = _blocks(data, args.block)
    print(f"input: {mb:.1f} MB, {len(blocks)} blocks of {args.block} B, {len(unit)} B per stream")
    results = {}
    for name, fn in (("naive splitlines + json.loads", run_naive), ("tasks.core.wire.sse.SSEParser", run_parser)):
        seconds, chunks = best_of(fn, blocks, args.repeat)
        results[name] = (seconds, chunks)
        print(f"{name:32s} {mb / seconds:8.1f} MB/s  {chunks} chunks  best of {args.repeat}: {seconds:.3f} s")
    (naive_s, naive_n), (parser_s, parser_n) = results.values()
    assert naive_n == parser_n, "both must see the same chunks"
    median_block = statistics.median(map(len, blocks))
    print(f"parser / naive time: {parser_s / naive_s:.2f}x (median block {median_block} B)")
    # A hostile peer: one line just under the 1 MiB cap in 256-byte reads (held pieces are never re-copied).
    long_line = [b"data: " + b"x" * 250] + [b"x" * 256] * 4000 + [b"\n\n"]
    seconds, _ = best_of(run_parser, long_line, args.repeat)
    print(f"one ~1 MiB line in 256 B reads: {seconds * 1000:.1f} ms")


if __name__ == "__main__":
    main()
