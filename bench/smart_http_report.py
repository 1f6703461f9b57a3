"""bench.smart_http's report: medians, ratios against the baselines, targets, and the table."""

from __future__ import annotations

from bench.harness import fmt, med, paired, spread, verdict
from bench.harness.baselines import Server

CLONE_RATIO_TARGET = 0.9
PUSH_DELTA_TARGET_MS = 150.0
HOOK_TARGET_MS = 30.0


def build_report(servers: list[Server], hooks: dict, meta: dict) -> dict:
    by_key = {s.key: s for s in servers}
    medians = {}
    for s in servers:
        medians[s.key] = {metric: med(values) for metric, values in s.samples.items()}
        medians[s.key]["spread"] = {metric: spread(values) for metric, values in s.samples.items()}
    ratios: dict = {}
    hs = by_key.get("hostsite")
    for key in ("nginx", "daemon"):
        base = by_key.get(key)
        if hs is None or base is None:
            continue
        h, b = medians["hostsite"], medians[key]
        ratios[key] = {
            "clone_throughput_ratio": (h["clone_mib_s"] / b["clone_mib_s"])
            if h.get("clone_mib_s") and b.get("clone_mib_s")
            else None,
            "clone_throughput_ratio_paired": paired(
                hs.samples.get("clone_mib_s", []), base.samples.get("clone_mib_s", []), lambda x, y: x / y
            ),
            "push_delta_ms": (h["push_ms"] - b["push_ms"])
            if h.get("push_ms") is not None and b.get("push_ms") is not None
            else None,
            "push_delta_ms_paired": paired(
                hs.samples.get("push_ms", []), base.samples.get("push_ms", []), lambda x, y: x - y
            ),
            "fetch_ratio": (h["fetch_ms"] / b["fetch_ms"])
            if h.get("fetch_ms") and b.get("fetch_ms")
            else None,
            "fetch_ratio_paired": paired(
                hs.samples.get("fetch_ms", []), base.samples.get("fetch_ms", []), lambda x, y: x / y
            ),
        }
    nginx = ratios.get("nginx", {})
    clone_ratio = nginx.get("clone_throughput_ratio")
    push_delta = nginx.get("push_delta_ms")
    targets = {
        "clone_throughput_ratio_vs_nginx": {
            "value": clone_ratio,
            "target": f">= {CLONE_RATIO_TARGET}",
            "ok": None if clone_ratio is None else clone_ratio >= CLONE_RATIO_TARGET,
        },
        "push_delta_ms_vs_nginx": {
            "value": push_delta,
            "target": f"<= {PUSH_DELTA_TARGET_MS:.0f}",
            "ok": None if push_delta is None else push_delta <= PUSH_DELTA_TARGET_MS,
        },
    }
    for name in ("pre-receive", "post-receive"):
        m = hooks.get(name, {}).get("median_ms")
        targets[f"{name}_median_ms"] = {
            "value": m,
            "target": f"<= {HOOK_TARGET_MS:.0f}",
            "ok": None if m is None else (m <= HOOK_TARGET_MS and not hooks[name].get("failures")),
        }
    return {
        "meta": meta,
        "servers": {
            s.key: {"label": s.label, "samples": s.samples, "errors": s.errors, "medians": medians[s.key]}
            for s in servers
        },
        "ratios_vs": ratios,
        "hooks": hooks,
        "targets": targets,
    }


def print_report(report: dict, servers: list[Server]) -> None:
    meta = report["meta"]
    out = []
    out.append("")
    out.append(f"hostsite smart HTTP benchmark: {meta['rounds']} rounds x (clone, {meta['reps']} no-op fetches, "
               f"{meta['reps']} pushes), servers interleaved in every round")  # fmt: skip
    out.append(f"repository: {meta['repository']}")
    out.append(
        f"pack: {meta['pack_mib']:.1f} MiB, {meta['objects']} objects, {meta['refs']} refs; all servers serve the "
        f"identical pack ({meta['pack_name']}), repacked once with `git repack -adb` + commit-graph"
    )
    out.append(f"git {meta['git_version']}; {meta.get('nginx_version') or 'nginx: not run'}; "
               f"{meta['cpus']} CPUs; load avg before {meta['loadavg_before']}")  # fmt: skip
    for key, reason in meta.get("skipped", {}).items():
        out.append(f"SKIPPED {key}: {reason}")
    out.append("")
    cols = [s.key for s in servers]
    labels = {s.key: s.label for s in servers}
    width = 24
    out.append(f"{'median [min-max]':<26}" + "".join(f"{labels[c]:>{width}}" for c in cols))
    rows = [
        ("full clone MiB/s", "clone_mib_s", ".1f"),
        ("full clone s", "clone_s", ".2f"),
        ("no-op fetch ms", "fetch_ms", ".0f"),
        ("small push ms", "push_ms", ".0f"),
    ]
    for title, metric, spec in rows:
        cells = []
        for c in cols:
            m = report["servers"][c]["medians"]
            value = m.get(metric)
            sp = m["spread"].get(metric)
            cell = fmt(value, spec) + (f" [{sp[0]:{spec}}-{sp[1]:{spec}}]" if sp else "")
            cells.append(f"{cell:>{width}}")
        out.append(f"{title:<26}" + "".join(cells))
    out.append("")
    out.append("ratios (medians of this run; 'paired' = median of the per-round side-by-side ratios):")
    targets = report["targets"]
    for key, label in (("nginx", "nginx+http-backend"), ("daemon", "git daemon")):
        r = report["ratios_vs"].get(key)
        if not r:
            continue
        out.append(f"  hostsite vs {label}:")
        line = (f"    clone throughput ratio   {fmt(r['clone_throughput_ratio'], '.3f'):>7}"
                f"  (paired {fmt(r['clone_throughput_ratio_paired'], '.3f')})")  # fmt: skip
        if key == "nginx":
            t = targets["clone_throughput_ratio_vs_nginx"]
            line += f"   target {t['target']}  {verdict(t['ok'])}"
        out.append(line)
        line = (f"    push latency delta   {fmt(r['push_delta_ms'], '+.0f'):>8} ms"
                f"  (paired {fmt(r['push_delta_ms_paired'], '+.0f')} ms)")  # fmt: skip
        if key == "nginx":
            t = targets["push_delta_ms_vs_nginx"]
            line += f"   target {t['target']} ms  {verdict(t['ok'])}"
        out.append(line)
        out.append(f"    no-op fetch ratio        {fmt(r['fetch_ratio'], '.2f'):>7}"
                   f"  (paired {fmt(r['fetch_ratio_paired'], '.2f')})  (hostsite ms / {label} ms)")  # fmt: skip
    hooks = report["hooks"]
    if hooks:
        out.append("")
        out.append("hooks, run directly with the platform's HOSTSITE_* environment and one ref-update line:")
        for name in ("pre-receive", "post-receive", "python -IS -c pass", "django.setup()"):
            h = hooks.get(name)
            if not h:
                continue
            if "error" in h:
                out.append(f"  {name:<22} {h['error']}")
                continue
            line = f"  {name:<22} median {h['median_ms']:7.1f} ms  [{h['min_ms']:.1f}-{h['max_ms']:.1f}]  N={h['n']}"
            if name in ("pre-receive", "post-receive"):
                t = targets[f"{name}_median_ms"]
                line += f"   target {t['target']} ms  {verdict(t['ok'])}"
                if h.get("failures"):
                    line += f"  ({h['failures']} runs exited non-zero: {h['last_error'][:200]})"
            elif name == "django.setup()":
                pre = hooks.get("pre-receive", {}).get("median_ms")
                if pre:
                    line += f"   (a Django-booting hook; {h['median_ms'] / pre:.0f}x the pre-receive median)"
            else:
                line += "   (interpreter floor for a -IS hook)"
            out.append(line)
    errors = [(s.label, e) for s in servers for e in s.errors]
    if errors:
        out.append("")
        out.append(f"{len(errors)} failed measurements (excluded from medians):")
        for label, e in errors[:20]:
            out.append(f"  {label}: {e[:400]}")
    out.append("")
    out.append(
        "targets: "
        + ", ".join(f"{k} {verdict(v['ok'])}" for k, v in targets.items())
        + f"   (whole run {meta['elapsed_s']:.0f} s)"
    )
    print("\n".join(out), flush=True)
