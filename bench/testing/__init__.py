"""Test doubles shipped with the bench, for its own tests and for anyone extending it: a scripted llama-server,
a fake NVML, a stand-in model hub, listeners for isolation probes, and fakes of the Servers and Sandbox protocols
(fakes.py)."""
