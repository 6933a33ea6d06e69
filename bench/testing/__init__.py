"""Test doubles shipped with the bench, for its own tests and for anyone extending it: a scripted llama-server,
a fake NVML and a stand-in model hub."""
