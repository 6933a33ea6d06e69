"""Targets on THIS machine for isolation tests: listeners bound to each of this host's own addresses (its primary
interface, the docker bridges' gateways), found at run time. A sandbox must reach none of them; nothing here aims
at a machine outside this one."""

from __future__ import annotations

import json
import socket
import subprocess
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any

# Probe code for inside a container: which (host, port) targets accept a connection, and the default route's
# gateway (None: no default route). Connections are tried side by side, so firewalled (silently dropped) targets
# cost one timeout, not many; 2 s is ample for a target on this machine that accepts (the control probes' are).
PROBE_FUNCTIONS = """
import concurrent.futures, socket, struct
def connect(target):
    try:
        socket.create_connection(tuple(target), timeout=2).close()
        return "connected"
    except Exception as e:
        return type(e).__name__
def connect_all(targets):
    with concurrent.futures.ThreadPoolExecutor(len(targets)) as pool:
        return dict(zip(targets, pool.map(connect, targets.values())))
def default_route():
    with open("/proc/net/route") as f:
        for line in f.readlines()[1:]:
            fields = line.split()
            if fields[1] == "00000000":
                return socket.inet_ntoa(struct.pack("<L", int(fields[2], 16)))
    return None
"""

# A TCP listener for inside a container on PORT: says when it listens, then names each peer it accepts.
LISTENER = """
import socket
server = socket.create_server(("0.0.0.0", PORT))
print("listening", flush=True)
while True:
    conn, peer = server.accept()
    print("accepted", peer[0], flush=True)
    conn.close()
"""


def _ip_json(*args: str) -> list[dict[str, Any]]:
    done = subprocess.run(["ip", "-j", *args], capture_output=True, text=True, timeout=10)
    if done.returncode != 0:
        raise RuntimeError(f"`ip -j {' '.join(args)}` failed ({done.stderr.strip()}): install iproute2")
    found: list[dict[str, object]] = json.loads(done.stdout or "[]")
    return found


def host_addresses() -> dict[str, str]:
    """Every IPv4 address of this host but loopback, by interface name (eth0, docker0, the bench's bridges)."""
    found = {}
    for interface in _ip_json("-4", "addr", "show"):
        for info in interface.get("addr_info", []):
            if info.get("scope") != "host":
                found[f"{interface['ifname']}:{info['local']}"] = str(info["local"])
    return found


def primary_address() -> str:
    """This host's own address on the interface of its default route (the one other machines see)."""
    devices = {str(route.get("dev")) for route in _ip_json("route", "show", "default")}
    for name, address in host_addresses().items():
        if name.split(":")[0] in devices:
            return address
    raise RuntimeError("no IPv4 address on the default route's interface: `ip route` shows no default route")


class Listener:
    """A TCP listener on host:(free port) that records every connection it accepts."""

    def __init__(self, host: str) -> None:
        self.sock = socket.create_server((host, 0))
        self.sock.settimeout(0.2)
        self.address = (host, int(self.sock.getsockname()[1]))
        self.accepted: list[tuple[str, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, peer = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.accepted.append(peer)
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.sock.close()

    def __enter__(self) -> Listener:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


def interface_address(name: str) -> str | None:
    """The first IPv4 address `ip` lists on interface `name`, or None when it holds none."""
    for interface in _ip_json("-4", "addr", "show", "dev", name):
        for info in interface.get("addr_info", []):
            return str(info["local"])
    return None


def bridge_host_address(network: dict[str, Any], address_of: Callable[[str], str | None] = interface_address) -> str:
    """This host's address on a Docker bridge network, from the network's `attrs`: the IPAM gateway where the
    engine lists one, else the address of the bridge interface itself (Docker 20.10's default bridge may report
    `"Config": [{"Subnet": ...}]` with no Gateway while docker0 holds 172.17.0.1)."""
    for config in (network.get("IPAM") or {}).get("Config") or []:
        if config.get("Gateway"):
            return str(config["Gateway"])
    options = network.get("Options") or {}
    interface = options.get("com.docker.network.bridge.name") or f"br-{str(network.get('Id', ''))[:12]}"
    address = address_of(interface)
    if address is None:
        raise RuntimeError(f"docker network {network.get('Name')!r}: no IPAM gateway and no address on {interface}")
    return address


def default_bridge_address(client: Any) -> str:
    """This host's address on Docker's default bridge, where containers on that bridge reach the host."""
    return bridge_host_address(client.networks.get("bridge").attrs)


def listeners_on_every_host_address() -> list[Listener]:
    return [Listener(address) for address in sorted(set(host_addresses().values()))]
