"""Storage backends below the files rules: the interface (interface.py), local/, sftp/, s3/, and the registry the core asks (registry.py). Nothing here imports appliance.core or appliance.store."""
