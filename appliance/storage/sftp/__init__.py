"""The sftp storage backend (backend.py) and what it is built on."""
