"""The tests' own way to find this host's address on a Docker bridge, with and without an IPAM gateway."""

from __future__ import annotations

import pytest

from bench.testing.host_targets import bridge_host_address

DEFAULT_BRIDGE = {"Name": "bridge", "Id": "f00d" * 16, "Options": {"com.docker.network.bridge.name": "docker0"}}


def test_the_ipam_gateway_is_taken_when_the_engine_lists_one() -> None:
    network = {**DEFAULT_BRIDGE, "IPAM": {"Config": [{"Subnet": "172.17.0.0/16", "Gateway": "172.17.0.1"}]}}
    never = lambda name: pytest.fail("no interface lookup is needed")  # noqa: E731
    assert bridge_host_address(network, address_of=never) == "172.17.0.1"


def test_without_a_gateway_the_bridge_interface_address_is_taken() -> None:
    """Docker 20.10's default bridge on some hosts: a subnet and no gateway; docker0 holds the address."""
    network = {**DEFAULT_BRIDGE, "IPAM": {"Config": [{"Subnet": "172.17.0.0/16"}]}}
    asked: list[str] = []
    assert bridge_host_address(network, address_of=lambda name: asked.append(name) or "172.17.0.1") == "172.17.0.1"
    assert asked == ["docker0"]


def test_a_user_network_without_a_gateway_names_its_br_interface() -> None:
    network = {"Name": "mine", "Id": "0123456789abcdef" * 4, "IPAM": {"Config": []}, "Options": {}}
    asked: list[str] = []
    assert bridge_host_address(network, address_of=lambda name: asked.append(name) or "10.9.0.1") == "10.9.0.1"
    assert asked == ["br-0123456789ab"]


def test_no_gateway_and_no_interface_address_is_a_clear_error() -> None:
    network = {**DEFAULT_BRIDGE, "IPAM": {"Config": None}}
    with pytest.raises(RuntimeError, match="no IPAM gateway and no address on docker0"):
        bridge_host_address(network, address_of=lambda name: None)
