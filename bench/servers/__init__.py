"""Flint and Jeff: the server kinds (embedded host processes, compose services, external URLs) and their choice."""
