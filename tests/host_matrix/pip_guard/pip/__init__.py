"""A stand-in for pip (see __main__.py): importable before the real one."""
