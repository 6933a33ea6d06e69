"""Where the agent runs: a throwaway Docker container, or a temp dir and a subprocess where no engine runs."""
