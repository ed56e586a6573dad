"""Adapters: one module per third-party library of the core, using its public API only.

The rest of ragd talks to these libraries only through them (import-linter checks it):

- `lancedb`: the chunk vector tables (one event loop thread per process runs every call);
  `arrow`: the Arrow data handed to and read from them (pyarrow);
- `tantivy`: the BM25 index, its schema, writer and term-query searches;
- `model2vec`: loading the static model and encoding texts; `tokenizers`: tokenizing by
  table, one of its fast paths, and a transformer's own tokenizer;
- `onnxruntime`: the second-stage transformer model's inference session;
  `huggingface_hub`: fetching that model's files by repository id;
- `watchdog`: inotify events under the watched roots;
- `pathspec`: gitignore-style include and exclude patterns.
- `docutils`: reStructuredText parsed into headings and blocks, no file read; a project's
  own directives and roles registered as generic ones through its public extension API.
- `markdown_it` (markdown-it-pyrs): Markdown source to its tree of block nodes.
- `nbformat`: Jupyter notebooks read, upgraded to format 4 and validated; imported only
  when a notebook is parsed.
- `httpx` (the distribution httpx2): every outbound HTTP request, with its timeouts,
  whole-request deadline, redirects one at a time, raw body in pieces, proxy variables.
- `ray`: `ragd reembed --ray`'s Ray Data job, through Lance datasets (lance_ray; the
  driver's side through `lancedb`); the optional extra `ragd[ray]`, imported only when a
  job starts.

A fast path lives inside its adapter, gives exactly what the public path gives (a test
compares them on real corpora), and is used only on the library versions it was tested
with. Shell libraries (click, starlette, uvicorn, apscheduler, structlog, prometheus_client)
each live in the one module of `ragd.cli` or `ragd.service` that uses them.
"""
