"""The s3 storage backend (backend.py) and what it is built on."""
