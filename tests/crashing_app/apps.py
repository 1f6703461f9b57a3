from django.apps import AppConfig

CRASH = "a push_recorded receiver crashed on purpose"


def crash(sender, **_kwargs) -> None:
    raise RuntimeError(CRASH)


class CrashingConfig(AppConfig):
    name = "tests.crashing_app"

    def ready(self) -> None:
        from repos.signals import push_recorded

        push_recorded.connect(crash, dispatch_uid="tests.crashing_app")
