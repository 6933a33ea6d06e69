"""One card per server pair: the `gpu_device` setting as every path needs it.

`gpu_device` is an index in nvidia-smi's order, a GPU UUID (`GPU-...`) or a MIG device UUID (`MIG-...`). An index
is turned into its card's UUID through NVML, once, so that every path names the same card whatever order it counts
in (CUDA's default order differs from nvidia-smi's, and containers number their GPUs from 0):

- host-process servers: CUDA_VISIBLE_DEVICES=<UUID> (CUDA takes GPU and MIG UUIDs), so `-ngl 999` offloads to that
  card alone instead of spreading the model over every GPU; CUDA_DEVICE_ORDER=PCI_BUS_ID keeps an index that could
  not be resolved (no NVML) in nvidia-smi's order;
- compose services: `device_ids: [<UUID>]` (compose.yaml's GPU_DEVICE);
- the memory sampler: that UUID alone (nvmlDeviceGetHandleByUUID takes MIG UUIDs too), so the row's gpu_uuid is
  the card's.

A worker that runs one pair per GPU passes its own value (a copy of the config with its `gpu_device`).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from types import ModuleType

from bench.measure.nvml import start_nvml

# GPU servers log the devices they see and the buffers they allocate (ggml's info lines show from verbosity 4), so
# that the bench can check each one came up on its card (bench.llama.placement).
GPU_LOG = {"LLAMA_ARG_LOG_VERBOSITY": "4"}


@dataclass(frozen=True)
class GpuPin:
    """The card both servers of a pair use, and how it was named."""

    setting: str  # gpu_device as configured
    uuid: str  # the card's UUID ("" when NVML could not tell: no driver, an index NVML does not list)

    @property
    def device(self) -> str:
        """What CUDA_VISIBLE_DEVICES and compose's device_ids get: the UUID when known, else the setting."""
        return self.uuid or self.setting

    @property
    def is_mig(self) -> bool:
        return self.device.startswith("MIG-")

    def cuda_environment(self) -> dict[str, str]:
        """The variables that pin a host llama-server to this card, and make it name the card it uses."""
        return {"CUDA_VISIBLE_DEVICES": self.device, "CUDA_DEVICE_ORDER": "PCI_BUS_ID", **GPU_LOG}

    def sampler_uuids(self) -> list[str] | None:
        """The UUIDs the sampler watches: this card's, or None (the GPUs serving a server) when unknown."""
        return [self.uuid] if self.uuid else None


def resolve_pin(setting: str, nvml: ModuleType | None = None) -> GpuPin:
    """gpu_device with its UUID: a UUID as given, an index looked up in NVML."""
    if not setting.isdigit():
        return GpuPin(setting, setting)
    module, _ = start_nvml(nvml)
    if module is None:
        return GpuPin(setting, "")
    try:
        uuid = module.nvmlDeviceGetUUID(module.nvmlDeviceGetHandleByIndex(int(setting)))
    except module.NVMLError:  # an index NVML does not list: left to CUDA, and the sampler watches the servers' GPUs
        return GpuPin(setting, "")
    finally:
        with contextlib.suppress(module.NVMLError):
            module.nvmlShutdown()
    return GpuPin(setting, uuid.decode() if isinstance(uuid, bytes) else str(uuid))


def watched_uuids(setting: str, pinned: bool, nvml: ModuleType | None = None) -> list[str] | None:
    """The GPUs a run's sampler watches: the pinned card for servers the bench places (`pinned`); for servers it
    does not place (external: bench.servers.kinds) only a UUID named outright, else the GPUs serving them."""
    if not pinned:
        return [setting] if not setting.isdigit() else None
    return resolve_pin(setting, nvml).sampler_uuids()
