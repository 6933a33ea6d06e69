"""Flint and Jeff: embedded host processes, compose services or external URLs, and llama-server's HTTP API."""
