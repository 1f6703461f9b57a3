import factory

from repos.models import Repository, User, Visibility


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = User
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda u: f"{u.username}@example.invalid")
    # No password by default: hashing one costs ~0.4 s (PBKDF2). Tests that sign in set one
    # with set_password() or create the user through the sign-up page.
    password = factory.django.Password(None)


class RepositoryFactory(factory.django.DjangoModelFactory):
    """A repository row *and* its bare repository on disk, through the real service."""

    class Meta:
        model = Repository

    owner = factory.SubFactory(UserFactory)
    name = factory.Sequence(lambda n: f"repo{n}")
    visibility = Visibility.PUBLIC

    @classmethod
    def _create(cls, model_class, *args, **kwargs):
        from repos.services import repository_create

        return repository_create(**kwargs)
