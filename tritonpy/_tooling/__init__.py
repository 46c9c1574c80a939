"""Low-level helpers shared by the tooling packages (config, check, envs, stubs, server, perf,
probe, export, cli). Private; never imported by the runtime."""
