"""The repository page (a repos template) asks workspaces how branch pushes by contributors
go, without repos importing workspaces."""

from django import template

from workspaces.selectors import workspace_settings

register = template.Library()


@register.simple_tag
def branch_pushes_to_workspace(repo) -> bool:
    return workspace_settings(repo).branch_pushes_to_workspace
