"""The coding agent: Flint writes code through four tools, Jeff comments on shell commands (standard library only)."""
