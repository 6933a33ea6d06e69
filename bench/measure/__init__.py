"""What a run measured: GPU memory through NVML, the numbers and failure labels read from its event trace."""
