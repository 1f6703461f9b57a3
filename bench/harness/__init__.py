"""What the benchmarks share. The common names are re-exported here, so a script says
`from bench.harness import Git, say, ...`; the history generator, the proxy and CPU accounting
are imported from their modules by the scripts that use them."""

from bench.harness.common import (
    BASE_DIR,
    GIT,
    MIB,
    PY,
    ZERO_OID,
    Git,
    MeasureError,
    SetupError,
    base_env,
    client_env,
    hostsite_env,
    hostsite_revision,
    manage,
    repo_create,
    say,
    user_token,
)
from bench.harness.frame import add_run_options, run_benchmark
from bench.harness.procs import Processes, free_port, start_web, start_worker, wait_for_http, wait_for_port
from bench.harness.stats import fmt, med, paired, pct, ratio, spread, summarize, time_runs, verdict

__all__ = [
    "BASE_DIR",
    "GIT",
    "MIB",
    "PY",
    "ZERO_OID",
    "Git",
    "MeasureError",
    "Processes",
    "SetupError",
    "add_run_options",
    "base_env",
    "client_env",
    "fmt",
    "free_port",
    "hostsite_env",
    "hostsite_revision",
    "manage",
    "med",
    "paired",
    "pct",
    "ratio",
    "repo_create",
    "run_benchmark",
    "say",
    "spread",
    "start_web",
    "start_worker",
    "summarize",
    "time_runs",
    "user_token",
    "verdict",
    "wait_for_http",
    "wait_for_port",
]
