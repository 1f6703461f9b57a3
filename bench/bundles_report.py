"""bench.bundles' report: per-scenario medians, the targets, and the table."""

from __future__ import annotations

from bench.harness import fmt, med, ratio, verdict

MIB = 1024 * 1024
MIN_COMMITS = 50_000  # the issue's repository size
ORIGIN_BYTES_TARGET = 0.01
ORIGIN_CPU_TARGET = 0.05
ZSTD_WIRE_TARGET = 0.6

SCENARIOS = ("none", "zstd", "standard")
SCENARIO_LABELS = {
    "none": "no bundles",
    "zstd": "bundles, zstd flavor",
    "standard": "bundles, standard flavor",
}
PHASES = ("fresh", "behind")
PHASE_LABELS = {"fresh": "fresh bundles", "behind": "bundles one day behind"}


METRICS = ("wall_s", "origin_bytes", "origin_upload_pack_bytes", "origin_requests", "origin_cpu_s",
           "bundle_bytes", "bundle_requests", "bundle_server_cpu_s", "wire_down_bytes", "wire_up_bytes",
           "client_pack_bytes")  # fmt: skip


def medians(samples: list[dict | None]) -> dict:
    ok = [s for s in samples if s]
    out = {m: med([s[m] for s in ok]) for m in METRICS}
    # /proc counts CPU in 10 ms ticks, so one clone's origin CPU is +-10 ms and a median of such
    # values moves in 10 ms steps (a third of a bundle clone's whole cost). The mean over the
    # rounds errs by a few ms instead: the CPU ratios use it.
    cpu = [s["origin_cpu_s"] for s in ok if s.get("origin_cpu_s") is not None]
    out["origin_cpu_mean_s"] = sum(cpu) / len(cpu) if cpu else None
    out["n"] = len(ok)
    out["spread"] = {m: (min(s[m] for s in ok), max(s[m] for s in ok)) if ok else None
                     for m in ("wall_s", "origin_cpu_s", "origin_bytes")}  # fmt: skip
    return out


def build_report(results: dict, build: dict, meta: dict, errors: list[str]) -> dict:
    summary = {phase: {sc: medians(results[phase][sc]) for sc in SCENARIOS} for phase in PHASES}
    fresh = summary["fresh"]
    ob = ratio(fresh["zstd"]["origin_bytes"], fresh["none"]["origin_bytes"])
    # The zstd clones' CPU from the block of clones in a row when there is one (precise to a
    # tick over the block), else the mean over the rounds.
    block = meta.get("cpu_block", {}).get("origin_cpu_per_clone_s")
    oc = ratio(
        block if block is not None else fresh["zstd"]["origin_cpu_mean_s"], fresh["none"]["origin_cpu_mean_s"]
    )
    zw = ratio(fresh["zstd"]["wire_down_bytes"], fresh["standard"]["wire_down_bytes"])
    targets = {
        "origin_bytes_fresh_vs_none": {"value": ob, "target": f"<= {ORIGIN_BYTES_TARGET}",
                                       "ok": None if ob is None else ob <= ORIGIN_BYTES_TARGET},
        "origin_cpu_fresh_vs_none": {"value": oc, "target": f"<= {ORIGIN_CPU_TARGET}",
                                     "ok": None if oc is None else oc <= ORIGIN_CPU_TARGET},
        "zstd_wire_vs_standard": {"value": zw, "target": f"<= {ZSTD_WIRE_TARGET}",
                                  "ok": None if zw is None else zw <= ZSTD_WIRE_TARGET},
    }  # fmt: skip
    # The same ratios for the standard flavor and for bundles one day behind (not targets).
    extra = {
        "origin_bytes_fresh_standard_vs_none": ratio(
            fresh["standard"]["origin_bytes"], fresh["none"]["origin_bytes"]
        ),
        "origin_cpu_fresh_standard_vs_none": ratio(
            fresh["standard"]["origin_cpu_mean_s"], fresh["none"]["origin_cpu_mean_s"]
        ),
    }
    behind = summary["behind"]
    for sc in ("zstd", "standard"):
        extra[f"origin_bytes_behind_{sc}_vs_none"] = ratio(
            behind[sc]["origin_bytes"], behind["none"]["origin_bytes"]
        )
        extra[f"origin_cpu_behind_{sc}_vs_none"] = ratio(
            behind[sc]["origin_cpu_mean_s"], behind["none"]["origin_cpu_mean_s"]
        )
    # Where the origin's bytes go in a fresh-bundle clone: its requests, from the last round.
    last = next((s for s in reversed(results["fresh"]["zstd"]) if s), None)
    breakdown = []
    if last:
        for r in last["records"]:
            path = r["path"].split(".git/", 1)[-1] if r["backend"] == "origin" else "/bundles/<key>"
            breakdown.append({"backend": r["backend"], "request": f"{r['method']} {path}", "down": r["down"],
                              "up": r["up"], "accept_encoding": r["accept_encoding"],
                              "content_encoding": r["content_encoding"],
                              "origin_cpu_s": r.get("origin_cpu_s")})  # fmt: skip
    raw = {phase: {sc: [{k: v for k, v in (s or {}).items() if k != "records"} for s in results[phase][sc]]
                   for sc in SCENARIOS} for phase in PHASES}  # fmt: skip
    return {"meta": meta, "build": build, "summary": summary, "targets": targets, "other_ratios": extra,
            "fresh_zstd_requests": breakdown, "samples": raw, "errors": errors}  # fmt: skip


def mib(n) -> str:
    return "n/a" if n is None else f"{n / MIB:.2f}"


def print_report(report: dict) -> None:
    meta, build, summary, targets = report["meta"], report["build"], report["summary"], report["targets"]
    out = [""]
    out.append(f"hostsite clone-bundle benchmark: {meta['rounds']} rounds, scenarios interleaved")
    out.append(f"  repository: {meta['repository']}; {meta['commits']:,} commits, {meta['refs']} refs; "
               f"origin pack {meta['origin_pack_mib']:.1f} MiB (repack -adb, commit-graph)")  # fmt: skip
    out.append(f"  git {meta['git_version']}; hostsite {meta['hostsite_revision']}; {meta['cpus']} CPUs; "
               f"load avg before {meta['loadavg_before']}")  # fmt: skip
    out.append("")
    out.append(f"bundles built by bundles_build ({build['kind']}), {build['wall_s']:.1f} s wall, "
               f"{build['cpu_s']:.1f} CPU-s (both flavors, incl. verification and storing):")  # fmt: skip
    sizes = {b["flavor"]: b["size"] for b in build["bundles"]}
    for flavor in ("standard", "zstd"):
        out.append(
            f"  {flavor:<9} {mib(sizes.get(flavor)):>9} MiB  {build['flavor_s'].get(flavor, 0):7.1f} s"
        )
    if sizes.get("standard"):
        out.append(f"  zstd / standard size: {sizes.get('zstd', 0) / sizes['standard']:.3f}")
    out.append("  steps: " + "; ".join(f"{s['step']} {s['s']:.1f} s" for s in build["steps"]))
    for label, row in build.get("pack_check", {}).items():
        out.append(f"  pack check (not a target), {label}: standard pack {mib(row['standard_pack_bytes'])} MiB "
                   f"({row['standard_pack_s']:.1f} s), uncompressed pack {mib(row['zstd_pack_bytes'])} MiB "
                   f"({row['zstd_pack_s']:.1f} s) -> zstd {mib(row['zstd_bytes'])} MiB, "
                   f"{row['zstd_vs_standard']:.3f}x the standard")  # fmt: skip
    out.append("")
    head = (f"  {'median of ' + str(meta['rounds']):<28}{'wall s':>8}{'origin MiB':>12}{'of which pack':>14}"
            f"{'origin CPU s':>13}{'(mean)':>8}{'bundle MiB':>11}{'bndl CPU s':>11}{'wire MiB':>10}"
            f"{'req o/b':>9}")  # fmt: skip
    for phase in PHASES:
        extra = f" ({meta['day']['commits']} commits pushed after the build)" if phase == "behind" else ""
        out.append(f"{PHASE_LABELS[phase]}{extra}:")
        out.append(head)
        for sc in SCENARIOS:
            m = summary[phase][sc]
            req = f"{fmt(m['origin_requests'], '.0f')}/{fmt(m['bundle_requests'], '.0f')}"
            out.append(f"  {SCENARIO_LABELS[sc]:<28}{fmt(m['wall_s'], '.1f'):>8}{mib(m['origin_bytes']):>12}"
                       f"{mib(m['origin_upload_pack_bytes']):>14}{fmt(m['origin_cpu_s'], '.2f'):>13}"
                       f"{fmt(m['origin_cpu_mean_s'], '.3f'):>8}"
                       f"{mib(m['bundle_bytes']):>11}{fmt(m['bundle_server_cpu_s'], '.2f'):>11}"
                       f"{mib(m['wire_down_bytes']):>10}{req:>9}")  # fmt: skip
        out.append("")
    out.append(f"origin idle: {meta['origin_idle_cpu_per_s']:.4f} CPU-s per second of wall time")
    if meta.get("cpu_block"):
        b = meta["cpu_block"]
        out.append(f"origin CPU per fresh-bundle (zstd) clone, {b['clones']} clones in a row: "
                   f"{1000 * b['origin_cpu_per_clone_s']:.1f} ms (the target's numerator; the denominator is the "
                   "mean of the no-bundle clones)")  # fmt: skip
    out.append("")
    out.append(
        "where the origin's bytes and CPU go in a fresh-bundle clone (zstd, last round; the origin's CPU"
    )
    out.append("read from /proc before and after each of its requests):")
    for r in report["fresh_zstd_requests"]:
        enc = (
            f"  Accept-Encoding: {r['accept_encoding']!r} -> {r['content_encoding'] or 'identity'}"
            if ("bundle-list" in r["request"] or r["backend"] == "bundles")
            else ""
        )
        cpu = f"{r['origin_cpu_s']:6.3f} cpu-s" if r.get("origin_cpu_s") is not None else " " * 12
        out.append(
            f"  {r['backend']:<8} {r['request']:<40} {r['down']:>12,} bytes down {r['up']:>9,} up {cpu}{enc}"
        )
    out.append("")
    labels = {
        "origin_bytes_fresh_vs_none": "origin bytes, fresh bundles (zstd) / no bundles",
        "origin_cpu_fresh_vs_none": "origin CPU, fresh bundles (zstd) / no bundles",
        "zstd_wire_vs_standard": "wire bytes, zstd flavor / standard flavor",
    }
    out.append("targets:")
    for key, t in targets.items():
        out.append(
            f"  {labels[key]:<52}{fmt(t['value'], '.4f'):>8}   target {t['target']:<8} {verdict(t['ok'])}"
        )
    out.append("other ratios (not targets): " + ", ".join(
        f"{k.removeprefix('origin_')} {fmt(v, '.4f')}" for k, v in report["other_ratios"].items()))  # fmt: skip
    if report["errors"]:
        out.append("")
        out.append(f"{len(report['errors'])} problems:")
        out.extend(f"  {e[:400]}" for e in report["errors"][:20])
    out.append("")
    out.append("targets: " + ", ".join(f"{k} {verdict(v['ok'])}" for k, v in targets.items())
               + f"   (whole run {meta['elapsed_s']:.0f} s)")  # fmt: skip
    print("\n".join(out), flush=True)


# --- main --------------------------------------------------------------------------------------
