"""The named card is a card of this host: every `gpu_device`/`gpu_devices` is checked against what NVML lists,
before anything starts, so that a mistyped UUID or an index past the count ends the bench in one line instead of
running a 20B model on the CPU (CUDA quietly hides a CUDA_VISIBLE_DEVICES entry that names no device, and every
entry after it: llama.cpp then finds no GPU and loads onto the CPU, with only a warning in its log).

A GPU in MIG mode cannot be used whole (CUDA sees only its MIG instances): naming it is refused, naming its
instances. On a host without a GPU (no driver, or none listed), any card named is refused, except the default
index 0 of `gpu_device`, which there means the CPU run every machine gets.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from bench.errors import PrerequisiteError
from bench.measure.nvml import start_nvml


@dataclass(frozen=True)
class Card:
    index: int
    uuid: str
    name: str
    mig: tuple[str, ...]  # the UUIDs of its MIG instances when MIG mode is on, else ()


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def mig_uuids(nvml: ModuleType, handle: Any) -> tuple[str, ...]:
    """The MIG instances of a GPU whose MIG mode is on; () for a GPU without MIG (or with it off)."""
    try:
        if int(nvml.nvmlDeviceGetMigMode(handle)[0]) != int(getattr(nvml, "NVML_DEVICE_MIG_ENABLE", 1)):
            return ()
        slots = int(nvml.nvmlDeviceGetMaxMigDeviceCount(handle))
    except nvml.NVMLError:  # a GPU without MIG support
        return ()
    found = []
    for slot in range(slots):
        with contextlib.suppress(nvml.NVMLError):  # an empty slot
            found.append(_text(nvml.nvmlDeviceGetUUID(nvml.nvmlDeviceGetMigDeviceHandleByIndex(handle, slot))))
    return tuple(found)


def host_cards(nvml: ModuleType) -> list[Card]:
    """Every GPU a started NVML lists, in nvidia-smi's order."""
    cards = []
    for index in range(int(nvml.nvmlDeviceGetCount())):
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
        name, uuid = _text(nvml.nvmlDeviceGetName(handle)), _text(nvml.nvmlDeviceGetUUID(handle))
        cards.append(Card(index, uuid, name, mig_uuids(nvml, handle)))
    return cards


def listing(cards: list[Card]) -> str:
    return "; ".join(f"{c.index}: {c.uuid} ({c.name}{', MIG' if c.mig else ''})" for c in cards)


def problem(setting: str, where: str, cards: list[Card]) -> str | None:
    """Why `setting` names no card of this host that a server can use whole; None when it does."""
    if setting.isdigit():
        if int(setting) >= len(cards):
            return (
                f"{where} {setting} is past this host's GPUs: NVML lists {len(cards)} (0 to {len(cards) - 1}: "
                f"{listing(cards)}); name one of them"
            )
        card = cards[int(setting)]
    elif setting.startswith("MIG-"):
        if any(setting in c.mig for c in cards):
            return None
        instances = [uuid for c in cards for uuid in c.mig]
        known = f"its MIG instances are {', '.join(instances)}" if instances else "no GPU of it is in MIG mode"
        return f"{where} {setting} is not a MIG instance of this host: {known} (nvidia-smi -L)"
    else:
        found = [c for c in cards if c.uuid == setting]
        if not found:
            return f"{where} {setting} is not a GPU of this host: NVML lists {listing(cards)} (nvidia-smi -L)"
        card = found[0]
    if card.mig:
        return (
            f"{where} {setting} ({card.uuid}) is in MIG mode and cannot be used whole: name one of its MIG "
            f"instances ({', '.join(card.mig)}), or turn MIG off (nvidia-smi -mig 0)"
        )
    return None


def check_cards(settings: Sequence[str], where: str, *, named: bool, nvml: ModuleType | None = None) -> None:
    """Every card in `settings` is one this host has (PrerequisiteError naming the first that is not). `named`: the
    cards were named outright (gpu_devices); else it is the one gpu_device, whose default 0 is fine without a GPU."""
    module, reason = start_nvml(nvml)
    cards: list[Card] = []
    if module is not None:
        try:
            cards = host_cards(module)
        except module.NVMLError as e:
            reason = f"NVML could not list the GPUs ({e})"
        finally:
            with contextlib.suppress(module.NVMLError):
                module.nvmlShutdown()
    if not cards:
        asked = [s for s in settings if named or s != "0"]
        if asked:
            raise PrerequisiteError(
                f"{where} {asked[0]} names a GPU, and this host has none to use ({reason or 'NVML lists no GPU'}): "
                f"run on the GPU host, or leave {where} unset to run on the CPU"
            )
        return
    for setting in settings:
        if found := problem(setting, where, cards):
            raise PrerequisiteError(found)


def card_name(uuid: str, nvml: ModuleType | None = None) -> str:
    """What NVML calls the card (or MIG instance) with this UUID; "" when it cannot tell."""
    module, _ = start_nvml(nvml)
    if module is None or not uuid:
        return ""
    try:
        return _text(module.nvmlDeviceGetName(module.nvmlDeviceGetHandleByUUID(uuid)))
    except module.NVMLError:
        return ""
    finally:
        with contextlib.suppress(module.NVMLError):
            module.nvmlShutdown()
