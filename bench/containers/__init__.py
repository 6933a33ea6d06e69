"""A container engine (Docker's, or podman's through the same API): a client, images built from docker/, the
sandbox network, its firewall rules, and the forwarder to host servers."""
