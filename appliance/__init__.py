"""The file-transfer portal appliance: SFTP, FTP and a web console on one reactor."""

__version__ = "0.1.0"
