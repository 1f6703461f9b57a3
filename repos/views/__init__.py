from repos.errors import ServiceError


def form_error(form, exc: ServiceError) -> None:
    """Show a service's error next to the field it names (or on the form)."""
    placed = False
    for field in exc.fields:
        if field in form.fields:
            form.add_error(field, exc.message)
            placed = True
    if not placed:
        form.add_error(None, exc.message)
