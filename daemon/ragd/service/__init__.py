"""The daemon shell: `ragd serve` and what assembles the core from a configuration.

`runtime` turns a validated Config into core objects (for the CLI too); `daemon` is the
lifecycle, `stopping` how it learns to stop; `writer` the one thread that writes the
stores; `scheduler` the periodic jobs; `backend` what the HTTP API answers from,
`http_api` its routes (Starlette) and `http_server` the listening socket (uvicorn);
`remote_sources` reads webhook secrets (`secret_files` a secret's file, within bounds),
`webhook_intake` bounds and queues deliveries; `metrics` (Prometheus),
`notify` (systemd) and `logs` (structlog) are the operator's view.
"""
