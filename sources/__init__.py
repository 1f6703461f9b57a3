"""Where a repository's history comes from: imports (importing.py chooses the refs and brings
them in; import_requests.py asks for a background import, import_runs.py runs it) and pull
mirrors (mirrors.py schedules and records, mirror_sync.py moves the refs), both through one
`git fetch` under the object checks (fetching.py). The models stay in repos.models."""
