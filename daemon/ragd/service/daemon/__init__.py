"""The daemon's own work: what `ragd serve` does besides answering.

`writer` is the one thread that writes the stores, draining the durable job queue;
`scheduler` queues the periodic jobs and `poller` runs remote polls on its thread;
`filler` embeds second-stage vectors in the background; `publisher` publishes
generations for read replicas; `intake` bounds and queues CMS deliveries; `stopping`
is how the process learns to stop and `notify` what it tells systemd.
"""
