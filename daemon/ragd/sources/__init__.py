"""Where documents come from: folders (`folders` lists and reads them safely, `watcher`
turns filesystem events into debounced hints) and CMS webhooks (`webhooks` checks who sent
a delivery, `deliveries` what it says, `fetch` gets an entry's content). Every change is a
hint; the indexer's content hashes decide."""
