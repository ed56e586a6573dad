"""The HTTP side of `ragd serve`: what a client may hold open (`connections`), the server
(`server`, uvicorn), the routes (`api`, Starlette) and what they answer from (`backend`),
the status page (`page`) and the Prometheus metrics (`metrics`, read by `scrape`).
"""
