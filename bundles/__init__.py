"""Clone bundles: building, storage backends (file, S3), bundle lists, Celery tasks.

Built in a later issue; settings already parse BUNDLE_STORAGE_URL / S3_ENDPOINT_URL.
"""
