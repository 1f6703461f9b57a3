"""What bench.showwork runs in a child Django process (`python -c`, on the code checked out
where it runs): the Work page through Django's handler, cold (the cache cleared) and warm,
with the cold requests' CPU time, and the selection alone; one JSON line out."""

SCRIPT = r"""
import json, resource, statistics, sys, time
import django
django.setup()
from django.core.cache import cache
from django.test import Client
from repos.models import Repository
from showwork import selection
from django.contrib.auth.models import AnonymousUser

url, rounds = sys.argv[1], int(sys.argv[2])
client = Client(HTTP_HOST="127.0.0.1")
repo = Repository.objects.select_related("owner").get(owner__username="bench", name="big")

def cpu():
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return (own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime) * 1000

def get():
    t = time.perf_counter()
    response = client.get(url)
    elapsed = (time.perf_counter() - t) * 1000
    assert response.status_code == 200, response.status_code
    return elapsed, response

get()  # imports, templates, the first connection: not part of any sample
cold, cold_cpu, warm, select_ms = [], [], [], []
for _ in range(rounds):
    cache.clear()
    c = cpu()
    ms, response = get()
    cold_cpu.append(cpu() - c)
    assert response["X-Showwork-Cache"] == "miss"
    cold.append(ms)
    for _ in range(4):
        ms, response = get()
        assert response["X-Showwork-Cache"] == "hit"
        warm.append(ms)
    t = time.perf_counter()
    graph = selection.select(repo, viewer=AnonymousUser())
    select_ms.append((time.perf_counter() - t) * 1000)
drafts = sum(1 for n in graph.nodes if n.kind == "draft")
print(json.dumps({"cold": cold, "cold_cpu": cold_cpu, "warm": warm, "select": select_ms, "nodes": len(graph.nodes), "drafts": drafts,
                  "more": graph.more, "bytes": len(response.content),
                  "width": len(graph.nodes[0].short) if graph.nodes else 0}))
"""
