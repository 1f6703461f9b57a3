"""Timing a command, and the medians, spreads, ratios and verdicts the reports print."""

from __future__ import annotations

import statistics
import subprocess
import time


def time_runs(argv: list[str], *, env: dict[str, str], n: int, stdin: bytes | None = None, cwd=None) -> dict:
    times, failures, last_err = [], 0, ""
    for _ in range(n):
        t0 = time.perf_counter()
        proc = subprocess.run(argv, input=stdin, capture_output=True, env=env, cwd=cwd, check=False)
        times.append(1000 * (time.perf_counter() - t0))
        if proc.returncode != 0:
            failures += 1
            last_err = proc.stderr.decode(errors="replace").strip()[-500:]
    return {"n": n, "median_ms": statistics.median(times), "min_ms": min(times), "max_ms": max(times),
            "failures": failures, "last_error": last_err, "samples_ms": times}  # fmt: skip


def med(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def spread(values: list) -> tuple[float, float] | None:
    values = [v for v in values if v is not None]
    return (min(values), max(values)) if values else None


def paired(a: list, b: list, op) -> float | None:
    pairs = [op(x, y) for x, y in zip(a, b, strict=False) if x is not None and y is not None]
    return statistics.median(pairs) if pairs else None


def fmt(value: float | None, spec: str = ".1f") -> str:
    return "n/a" if value is None else format(value, spec)


def verdict(ok: bool | None) -> str:
    return "n/a" if ok is None else ("PASS" if ok else "MISS")


def ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def pct(values: list[float], q: int) -> float | None:
    values = sorted(v for v in values if v is not None)
    if not values:
        return None
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def summarize(times: list[float]) -> dict:
    return {"n": len(times), "median_ms": statistics.median(times), "p90_ms": pct(times, 90),
            "min_ms": min(times), "max_ms": max(times)}  # fmt: skip
