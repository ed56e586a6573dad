"""Bulk re-embedding after a model change (`ragd reembed`): the plan, the embedding and the
switch (`bulk`), and where the embedding runs, here or on a Ray cluster (`backends`)."""
