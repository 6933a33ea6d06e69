"""The Docker engine: a client, images built from docker/, the sandbox network and the forwarder to host servers."""
