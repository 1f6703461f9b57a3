# Compare-and-swap ref updates for the proc-receive hook: what one command will do (a Plan),
# applied alone or with the rest of an atomic push in one `git update-ref --stdin`
# transaction, in the hook's environment (repos.hooks.hookgit).
from repos.hooks.hookgit import ZERO, is_ancestor, is_zero, run, tip

SHORT = 12
FORCE_OPTIONS = ("force", "force-push")  # -o force; Gitea's AGit flow says -o force-push


class Plan:
    """One command's outcome: refused (`refusal` set), or `target` moving from `expected` to
    `new` (nothing to write when they are equal), reported to git under the target's name."""

    __slots__ = ("expected", "forced", "message", "new", "ref", "refusal", "retry", "target")

    def __init__(self, ref, target, expected, new, forced=False, message="", refusal=None, retry=None):
        self.ref, self.target, self.expected, self.new = ref, target, expected, new
        self.forced, self.message, self.refusal = forced, message, refusal
        self.retry = retry  # the Plan to make when an optimistic compare-and-swap loses

    @classmethod
    def refused(cls, ref, reason):
        return cls(ref, None, ZERO, ZERO, refusal=reason)

    def report(self):
        """(status line, option lines) for proc-receive's answer."""
        if self.refusal:
            return f"ng {self.ref} {self.refusal}", []
        lines = [
            f"option refname {self.target}",
            f"option old-oid {self.expected}",
            f"option new-oid {self.new}",
        ]
        if self.forced:
            lines.append("option forced-update")
        return f"ok {self.ref}", lines

    def stdin_line(self):
        """The `update-ref --stdin` instruction, or "" when the ref already is where it goes."""
        if self.refusal or self.expected == self.new:
            return ""
        if is_zero(self.new):
            return f"delete {self.target} {self.expected}\n"
        return f"update {self.target} {self.new} {self.expected}\n"


def forced(options):
    return any(key in options for key in FORCE_OPTIONS)


def plan_cas(ref, target, old, new, options, *, message, limit_check=None, optimistic=False):
    """A client's update of `target` (its name for it: `ref`), judged against the target's tip
    now. The client's fast-forward check (which `+`/`--force` skips) was against `old`, what it
    was shown; a ref it was not shown (another's workspace, hidden from every pusher, or any
    workspace ref when the advertisement came from git itself) arrives as old=0, so a push
    that cannot say --force gets `-o force` instead:
      old == tip: update (the client checked, or was forced); tip is zero: create;
      a fast-forward from the tip: update; `-o force`: update; else refused, naming the tip.
    Deletion is compare-and-delete against what the client was shown; of a ref it was not
    shown (git sends those too, when named in full), only with `-o force`."""
    if optimistic and not is_zero(new) and (not is_zero(old) or limit_check is None or not limit_check()):
        # Most pushes find the ref where the client was shown it (or absent, for a new one): write
        # against that without reading the tip first (one git process less on the push's path),
        # and judge against the tip only when that compare-and-swap loses (apply).
        rewrite = not is_zero(old) and not is_ancestor(old, new)
        return Plan(ref, target, old, new, rewrite, message, retry=lambda: plan_cas(
            ref, target, old, new, options, message=message, limit_check=limit_check))  # fmt: skip
    current = tip(target)
    if is_zero(new):
        if is_zero(current):
            return Plan.refused(ref, f"{target} does not exist; nothing to delete")
        if not is_zero(old) and old != current:
            return Plan.refused(
                ref, f"{target} is at {current[:SHORT]}, not {old[:SHORT]}; fetch it and delete again"
            )
        if is_zero(old) and not forced(options):
            # The client was not shown the ref, so it could not say which tip it meant to delete.
            return Plan.refused(
                ref,
                f"{target} is at {current[:SHORT]}; to delete it, say so: git push -o force origin :{ref}",
            )
        return Plan(ref, target, current, new, message=message)
    if is_zero(current):
        if limit_check is not None and (reason := limit_check()):
            return Plan.refused(ref, reason)
        return Plan(ref, target, current, new, message=message)
    if old == current or current == new:
        return Plan(ref, target, current, new, current != new and not is_ancestor(current, new), message)
    if is_ancestor(current, new):
        return Plan(ref, target, current, new, False, message)
    if forced(options):
        return Plan(ref, target, current, new, True, message)
    return Plan.refused(
        ref,
        f"{target} is at {current[:SHORT]}, which {new[:SHORT]} does not contain. Fetch it "
        f"(git fetch origin {target}) and rebase or merge, or replace it: "
        f"git push -o force origin {new}:{ref}",
    )


def plan_direct(ref, old, new, message):
    """A ref written as named: compare-and-swap against what the client sent, as receive-pack
    does. A deletion the client sends with old=0 (a ref it was not shown: an admin removing
    refs/pull/... of an import) is compared with the ref's tip, which is what gets recorded."""
    if is_zero(old) and is_zero(new):
        old = tip(ref)
    return Plan(
        ref, ref, old, new, not is_zero(old) and not is_zero(new) and not is_ancestor(old, new), message
    )


def apply(plan):
    """Write one Plan alone (a push that is not atomic); returns its (status, option lines)."""
    line = plan.stdin_line()
    if line:
        args = ["update-ref", "-m", plan.message]
        if is_zero(plan.new):
            args += ["-d", plan.target, plan.expected]
        else:
            args += [plan.target, plan.new, plan.expected]
        result = run(*args)
        if result.returncode != 0:
            if plan.retry is not None:
                return apply(plan.retry())
            if "exists; cannot create" in result.stderr:
                # A ref and a directory of the same name (refs/users/me/x and refs/users/me/x/y).
                why = result.stderr.strip().splitlines()[-1].removeprefix("fatal: ").removeprefix("error: ")
                return f"ng {plan.ref} {why}; push under another name, or delete the other ref first", []
            # The compare-and-swap lost: a concurrent push cannot be overwritten.
            return f"ng {plan.ref} {plan.target} changed while pushing; push again", []
    return plan.report()


def apply_atomic(plans, message):
    """All of a push's Plans, or none: one transaction. Returns [(status, option lines)]."""
    refused = next((p for p in plans if p.refusal), None)
    if refused is not None:
        return [
            p.report() if p.refusal else (f"ng {p.ref} atomic push failed: {refused.ref} was refused", [])
            for p in plans
        ]
    body = "".join(p.stdin_line() for p in plans)
    if body:
        result = run("update-ref", "-m", message, "--stdin", input=f"start\n{body}prepare\ncommit\n")
        if result.returncode != 0:
            why = (result.stderr.strip().splitlines() or ["a ref changed while pushing"])[0]
            why = why.removeprefix("fatal: ").removeprefix("error: ")
            return [(f"ng {p.ref} atomic transaction failed: {why}", []) for p in plans]
    return [p.report() for p in plans]
