"""The bench: runs the agent on fixtures against real llama-servers and writes one results row per run."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # the checkout: agent/, docker/, fixtures/, results/ live here
