"""The daemon shell: `ragd serve` and what assembles the core from a configuration.

Rooms, each importing only those below it:

- `serve` (`ragd serve`'s lifecycle) and `replica` (`ragd serve --reader`): they build the rest;
- `http`: the HTTP server, its connections' bounds, the API's routes and what they answer
  from (`backend`), the status page, Prometheus metrics;
- `mcp`: the MCP server's tools, its endpoint on /mcp and its sessions;
- `daemon`: the daemon's own work: the one writer thread, the scheduler, remote polls,
  the second-stage filler, publishing for replicas, the webhook intake, stop signals and
  systemd notification;
- at the bottom, shared by all: `runtime` (a validated Config turned into core objects, for
  the CLI too), `remote_sources` (webhook, sitemap and WordPress sources, their secrets read
  by `secret_files`), `readers` (long-lived read handles) and `logs` (structlog).
"""
