"""The local storage backend (backend.py) and what it is built on."""
