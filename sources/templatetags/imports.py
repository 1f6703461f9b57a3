"""How an import's progress reads, the same on the pages and in the API (which the page's
script polls): "Receiving objects", "1,234 of 5,678 objects", "12.5 MiB"."""

from __future__ import annotations

from django import template

register = template.Library()

WAITING = "Waiting for a worker"


def progress_text(imp) -> dict:
    objects = ""
    if imp.objects_total:
        objects = f"{imp.objects_done:,} of {imp.objects_total:,} objects"
    elif imp.objects_done:
        objects = f"{imp.objects_done:,} objects"
    return {
        "state": imp.get_state_display(),
        "phase": imp.phase or (WAITING if imp.state == "queued" else ""),
        "percent": imp.percent,
        "objects": objects,
        "received": f"{imp.bytes_received / 2**20:,.1f} MiB received" if imp.bytes_received else "",
        "cancelling": bool(imp.cancel_requested and imp.active),
    }


@register.filter
def import_progress(imp) -> dict:
    return progress_text(imp)
