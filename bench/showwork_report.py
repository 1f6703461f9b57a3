"""bench.showwork's targets and the table it prints."""

from __future__ import annotations

from bench.harness import fmt, verdict

COLD_TARGET_MS = 300.0
WARM_TARGET_MS = 50.0


def print_report(report: dict) -> None:
    m, r = report["meta"], report["results"]
    out = ["", "hostsite Work view benchmark",
           f"  repository: {m['repository']}, {m['commits']:,} commits on main; {m['refs']:,} refs",
           f"  {m['heads']:,} workspace heads ({m.get('release_heads', 0)} on release branches), {m['drafts']:,} draft commits; bases up to {m['deepest_base']:,} "
           f"commits below main's tip (median {m['median_base_depth']:,.0f})",
           f"  git {m['git_version']}; hostsite {m['hostsite_revision']}; {m['cpus']} CPUs; "
           f"load avg before {m['loadavg_before']}", "",
           f"the page shows {r['nodes']} nodes ({r['drafts_shown']} drafts, {r['more']:,} more not shown), "
           f"hashes of {r['hash_width']} characters, {r['page_bytes']:,} bytes", "",
           "server time of GET /bench/big/work (median)      measured   target",
           f"  cold (graph cache cleared)                    {fmt(r['cold_ms']):>7} ms  <= {COLD_TARGET_MS:.0f} ms  "
           f"{verdict(r['cold_ok'])}  ({fmt(r['cold_ms'] / COLD_TARGET_MS, '.2f')}x the target)",
           f"  warm (cached graph)                           {fmt(r['warm_ms']):>7} ms  <= {WARM_TARGET_MS:.0f} ms  "
           f"{verdict(r['warm_ok'])}  ({fmt(r['warm_ms'] / WARM_TARGET_MS, '.2f')}x the target)",
           f"  of which the selection alone (git + Python)   {fmt(r['select_ms']):>7} ms",
           f"  cold, CPU time of the server (Python + git)   {fmt(r['cold_cpu_ms']):>7} ms",
           f"  through gunicorn, client wall time: cold {fmt(r['http_cold_ms'])} ms, warm {fmt(r['http_warm_ms'])} ms",
           f"  (whole run {m['elapsed_s']:.0f} s)"]  # fmt: skip
    b = r.get("baseline")
    if b:
        out += ["", f"side by side with {m['baseline']} (same repository, same run, alternating)",
                "                          baseline       this    this/baseline",
                *(f"  {label:22s}{fmt(b[key]):>9} ms{fmt(r[key]):>8} ms    {fmt(r[key] / b[key], '.2f')}x"
                  for label, key in (("cold", "cold_ms"), ("cold, CPU time", "cold_cpu_ms"), ("warm", "warm_ms"),
                                     ("selection alone", "select_ms")) if b[key] and r[key] is not None),
                f"  baseline page: {b['nodes']} nodes ({b['drafts_shown']} drafts)"]  # fmt: skip
    print("\n".join(out), flush=True)
