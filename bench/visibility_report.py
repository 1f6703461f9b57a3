"""bench.visibility's report: the targets and the table."""

from __future__ import annotations

from bench.harness import fmt, verdict

RATIO_TARGET = 1.2
REPOS = ("moderated", "plain")

# --- report ------------------------------------------------------------------------------------


def build_targets(rows: dict) -> dict:
    out = {}
    for key in ("push_workspace", "push_nameless", "page"):
        ratio = rows[key]["ratio"]
        out[f"{key}_ratio"] = {"value": ratio, "target": f"<= {RATIO_TARGET}",
                               "ok": None if ratio is None else ratio <= RATIO_TARGET}  # fmt: skip
    return out


def print_report(report: dict) -> None:
    meta, rows, closure, hooks, rule, targets = (
        report[k] for k in ("meta", "rounds", "closure", "hooks", "rule", "targets")
    )
    pop = meta["populate"]
    out = ["", f"hostsite visibility benchmark: {meta['commits']:,} commits; {pop['workspace_refs']:,} workspace refs "
           f"({meta['users']:,} users x 5, {pop['ref_format']}); mallory's {meta['mallory_commits']} commits taken down, "
           f"dave's {meta['dave_commits']} hidden (bench/moderated only)",
           f"  git {meta['git_version']}; hostsite {meta['hostsite_revision']}; {meta['cpus']} CPUs; "
           f"load avg before {meta['loadavg_before']}, after {meta['loadavg_after']}",
           f"  closure for anonymous and carol: {closure['objects']:,} objects; prefixes {' '.join(closure['prefixes'])}",
           "", f"median of {meta['rounds']} rounds (pages and fetches 3 per round), moderated and plain interleaved",
           f"  {'':<50}{'moderated':>10}{'plain':>8}{'ratio':>7}{'paired':>8}  ms"]  # fmt: skip
    for key, r in rows.items():
        line = (f"  {r['what']:<50}{fmt(r['moderated_median_ms'], '.0f'):>10}{fmt(r['plain_median_ms'], '.0f'):>8}"
                f"{fmt(r['ratio'], '.2f'):>7}{fmt(r['paired_ratio'], '.2f'):>8}")  # fmt: skip
        if f"{key}_ratio" in targets:
            line += f"   target <= {RATIO_TARGET}x  {verdict(targets[f'{key}_ratio']['ok'])}"
        out.append(line)
    if report["errors"]:
        out.append(f"  {len(report['errors'])} failed or unexpected requests:")
        out.extend(f"    {e[:300]}" for e in report["errors"][:10])
    out += ["", f"closure in-process (manage.py shell, median of {closure['runs']}): compute "
            f"{closure['compute_median_ms']:.1f} ms, read the cache file {closure['file_median_ms']:.1f} ms, "
            f"per-process memory {closure['memory_median_ms']:.2f} ms (of which the refs fingerprint "
            f"{closure['fingerprint_median_ms']:.2f} ms)"]  # fmt: skip
    out += ["", f"pre-receive hook run directly, the platform's environment (N={meta['hook_runs']}, interleaved); "
            f"HOSTSITE_BLOCKED_PREFIXES given: moderated {hooks['env_moderated_has_blocked_prefixes']}, "
            f"plain {hooks['env_plain_has_blocked_prefixes']}",
            f"  {'':<60}{'median':>8}{'min':>8}{'max':>8}  ms"]  # fmt: skip
    for name, h in hooks.items():
        if isinstance(h, dict):
            line = f"  {name:<60}{h['median_ms']:>8.1f}{h['min_ms']:>8.1f}{h['max_ms']:>8.1f}"
            if h.get("unexpected"):
                line += f"  UNEXPECTED: {h['unexpected'][:200]}"
            out.append(line)
    out += ["", "the rule applies (mallory's commit, anonymous): " + "; ".join(
        f"bench/{repo} page {r['page_status']}, v2 fetch {r['fetch'][0]}{' with a pack' if r['fetch'][1] else ''}"
        for repo, r in rule.items())]  # fmt: skip
    out += ["", "targets: " + ", ".join(f"{k} {fmt(v['value'], '.2f')} {verdict(v['ok'])}" for k, v in targets.items())
            + f"   (whole run {meta['elapsed_s']:.0f} s)"]  # fmt: skip
    print("\n".join(out), flush=True)
