"""Where the agent runs: a throwaway container (Docker or podman), or a temp dir and a subprocess where no engine
runs; each kind also owns its way to the servers."""
