"""Thin Celery tasks for showwork: cached Work graphs go stale when refs move."""

from __future__ import annotations

from celery import shared_task

from showwork import cache


@shared_task(ignore_result=True)
def forget_graphs(repository_id: int) -> str:
    cache.bump(repository_id)
    return "bumped"
