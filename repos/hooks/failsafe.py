# How every hook ends when something unexpected breaks it: one `hostsite:` line for the pusher,
# never a Python traceback (git relays a hook's stderr to the client, with the server's paths in
# it). Standard library only: installed beside the hooks (repos.storage.install_hooks).
import sys


def run(main, hook: str, consequence: str) -> int:
    """main()'s exit status; if it raises, 1 and a line naming the hook, the error's type and
    what became of the push (`consequence`)."""
    try:
        return main()
    except Exception as exc:
        sys.stderr.write(f"hostsite: the {hook} hook failed ({type(exc).__name__}); {consequence}\n")
        sys.stderr.flush()
        return 1
