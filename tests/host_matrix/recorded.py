"""A GPU host of the matrix, made of recorded facts (data/): what nvidia-smi, `docker info` and a CUDA llama-server
print there, and the NVML that answers like it (bench.testing.fake_pynvml, built from the same records).

A host is a small JSON file (Host.write) that child processes find through $AGENTBENCH_HOST: the `pynvml` shim
(nvml_shim/pynvml.py) and the stand-in CUDA llama-server (cuda_server.py) read it, so `make` and `bench run` run
their own decisions against it, unchanged.

CUDA's view of the host follows CUDA's documented rules for CUDA_VISIBLE_DEVICES (docs/gpu.md):
indices in PCI order, GPU UUIDs (a unique prefix is enough) and MIG UUIDs; an entry that names no device hides it
and every entry after it; a GPU in MIG mode is not usable as a whole; a build whose CUDA major is newer than the
driver's does not start ("CUDA driver version is insufficient").
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.testing.fake_pynvml import MIB, FakeDevice, FakeNvml, NVMLError_LibraryNotFound, State

DATA = Path(__file__).resolve().parent / "data"
HOST_VARIABLE = "AGENTBENCH_HOST"
BRANCHES = ("R535", "R550", "R570", "R580")
_DRIVER = re.compile(r"Driver Version: (\S+)\s+CUDA Version: (\d+)\.(\d+)")
_MIG = re.compile(r"^\s+MIG (\S+)\s+Device\s+(\d+): \(UUID: (MIG-[^)]+)\)")
_GPU_LINE = re.compile(r"^GPU (\d+): .*\(UUID: (GPU-[^)]+)\)")


def records(name: str) -> list[str]:
    """A data file's lines, without its header comments ("# ..."; nvcc's own "#$ ..." lines are data)."""
    return [line for line in (DATA / name).read_text().splitlines() if line and not re.match(r"#( |$)", line)]


def sections(name: str) -> dict[str, list[str]]:
    """A data file of [section] blocks."""
    found: dict[str, list[str]] = {}
    current = ""
    for line in records(name):
        if line.startswith("[") and line.endswith("]"):
            current = line[1:-1]
            found[current] = []
        else:
            found[current].append(line)
    return found


def driver_line(branch: str) -> tuple[str, tuple[int, int]]:
    """(driver version, newest CUDA it runs) from the branch's nvidia-smi header."""
    line = next(line for line in records("drivers.txt") if line.startswith(branch))
    found = _DRIVER.search(line)
    assert found, line
    return found.group(1), (int(found.group(2)), int(found.group(3)))


@dataclass(frozen=True)
class Card:
    """One device CUDA could see: a whole GPU, or a MIG instance."""

    index: int
    name: str
    uuid: str
    mib: int
    capability: tuple[int, int]
    mig: tuple[Card, ...] = ()


def cards(gpus: str, mig: str | None = None) -> list[Card]:
    """The GPUs of an nvidia-smi CSV record, with the MIG instances of an `nvidia-smi -L` record."""
    found = []
    for line in records(gpus):
        index, name, uuid, memory, capability = (part.strip() for part in line.split(","))
        major, minor = capability.split(".")
        found.append(Card(int(index), name, uuid, int(memory.split()[0]), (int(major), int(minor))))
    if mig is None:
        return found
    parent, instances = None, {}
    for line in records(mig):
        if gpu := _GPU_LINE.match(line):
            parent = next(c for c in found if c.uuid == gpu.group(2))
        elif (instance := _MIG.match(line)) and parent is not None:
            profile, number, uuid = instance.groups()
            gib = int(re.search(r"(\d+)gb", profile).group(1))  # type: ignore[union-attr]
            card = Card(int(number), f"{parent.name} MIG {profile}", uuid, gib * 1024, parent.capability)
            instances.setdefault(parent.uuid, []).append(card)
    return [Card(c.index, c.name, c.uuid, c.mib, c.capability, tuple(instances.get(c.uuid, ()))) for c in found]


@dataclass
class Host:
    """One cell's host: a driver branch (None: no driver), its GPUs, Docker's answer, and the CUDA of the llama.cpp
    build installed there (None: a CPU build)."""

    driver: str | None = "R580"
    gpus: str = "gpus-1.txt"
    mig: str | None = None
    docker: str | None = None  # a docker-info-*.txt record, or None: no engine
    build_cuda: str | None = "13.0"
    used_mib: int = 1  # each GPU's memory in use at rest
    notes: dict[str, Any] = field(default_factory=dict)

    def write(self, path: Path) -> Path:
        path.write_text(json.dumps(asdict(self)))
        return path

    @classmethod
    def from_env(cls) -> Host:
        return cls(**json.loads(Path(os.environ[HOST_VARIABLE]).read_text()))

    def cards(self) -> list[Card]:
        return cards(self.gpus, self.mig) if self.driver else []

    def nvml(self) -> FakeNvml:
        """NVML as this host's driver answers (no driver: the library is not found, as on a CPU machine)."""
        if self.driver is None:
            return FakeNvml([], init_error=NVMLError_LibraryNotFound())
        version, cuda = driver_line(self.driver)

        def device(card: Card) -> FakeDevice:
            return FakeDevice(
                card.uuid,
                [State(used=self.used_mib * MIB)],
                name=card.name,
                total=card.mib * MIB,
                compute_capability=card.capability,
                mig_devices=[device(m) for m in card.mig],
            )

        return FakeNvml([device(c) for c in self.cards()], driver=version, cuda_driver=cuda[0] * 1000 + cuda[1] * 10)

    def docker_info(self) -> dict[str, Any] | None:
        return json.loads(records(self.docker)[0]) if self.docker else None

    def cuda_devices(self, visible: str | None) -> list[Card] | str:
        """The devices a CUDA program started with CUDA_VISIBLE_DEVICES=`visible` sees, or why CUDA did not start."""
        lines = sections("llama-cuda-startup.txt")
        whole = self.cards()
        if not self.driver or not whole:
            return lines["no device"][0]
        if self.build_cuda and int(self.build_cuda.split(".")[0]) > driver_line(self.driver)[1][0]:
            return lines["old driver"][0]
        if visible is None:
            seen = [c for c in whole if not c.mig]
        else:
            seen = []
            for entry in (part.strip() for part in visible.split(",")):
                card = self._named(entry, whole)
                if card is None:
                    break  # CUDA hides an entry it cannot match and every entry after it
                seen.append(card)
        return seen or lines["no device"][0]

    @staticmethod
    def _named(entry: str, whole: list[Card]) -> Card | None:
        if entry.isdigit():
            card = whole[int(entry)] if int(entry) < len(whole) else None
            return None if card is None or card.mig else card
        if entry.startswith("MIG-"):
            return next((m for c in whole for m in c.mig if m.uuid == entry), None)
        matches = [c for c in whole if c.uuid.startswith(entry) and not c.mig]
        return matches[0] if len(matches) == 1 else None


def startup_log(seen: list[Card] | str, model_mib: int = 11536) -> str:
    """What a CUDA llama-server started on `seen` logs at -lv 4: its devices and its buffers on CUDA0, or CUDA's
    failure (`seen` is then the line) and its buffers on the CPU (data/llama-cuda-startup.txt)."""
    lines = sections("llama-cuda-startup.txt")
    sizes = {"model_mib": f"{model_mib:.2f}", "kv_mib": "192.00", "compute_mib": "398.38", "embed_mib": "300.00"}
    if isinstance(seen, str):
        return "\n".join([seen, *(line.format(**sizes) for line in lines["cpu buffers"])]) + "\n"
    total = sum(card.mib for card in seen)
    out = [lines["found"][0].format(count=len(seen), total_mib=total)]
    for index, card in enumerate(seen):
        cc = f"{card.capability[0]}.{card.capability[1]}"
        out.append(lines["device"][0].format(index=index, name=card.name, cc=cc, mib=card.mib))
    out += [line.format(layers=25, **sizes) for line in lines["gpu buffers"]]
    return "\n".join(out) + "\n"


def device_listing(seen: list[Card] | str) -> str:
    """`llama-server --list-devices` on `seen` (stdout), as common/arg.cpp prints it."""
    lines = sections("llama-cuda-startup.txt")
    if isinstance(seen, str):
        return "\n".join(lines["list none"]) + "\n"
    entry = lines["list devices"][1]
    listed = [entry.format(index=i, name=c.name, mib=c.mib, free_mib=c.mib - 1) for i, c in enumerate(seen)]
    return "\n".join([lines["list devices"][0], *listed]) + "\n"
