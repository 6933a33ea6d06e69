"""The bench: runs the agent on fixtures against real llama-servers and writes one results row per run."""
