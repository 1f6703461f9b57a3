"""Clone bundles: building (build.py, packing.py), storage backends (storage.py: file; s3.py),
bundle lists and objects (views.py), Celery tasks (tasks.py) after pushes (receivers.py)."""
