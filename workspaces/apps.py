from pathlib import Path

from django.apps import AppConfig

HERE = Path(__file__).resolve().parent


class WorkspacesConfig(AppConfig):
    name = "workspaces"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from repos import extensions
        from repos import visibility as access
        from workspaces import gitconfig, receivers, visibility  # noqa: F401 - receivers connects signals

        # The hooks judge pushes with the ref-namespace policy, and nameless pushes
        # (refs/for/...) go through proc-receive.
        extensions.set_push_policy(HERE / "policy.py")
        extensions.register_hook("proc-receive", HERE / "hooks" / "proc_receive.py")
        extensions.register_hook_environment(gitconfig.hook_environment)
        # Pushes may not point refs at content a moderator took down or hid (pre-receive).
        extensions.register_hook_environment(visibility.hook_environment)
        # What each person may see: one rule, asked by every exit.
        access.register(visibility.view_for)
        extensions.register_git_config(gitconfig.git_config)
        # Protocol v2 serves objects by id whatever hideRefs says: wants are checked too.
        extensions.register_want_guard(gitconfig.refused_wants)
