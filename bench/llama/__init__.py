"""llama.cpp itself: its build and binaries, devices and GPU pinning, images, models, HTTP API and measurements."""
