"""`ragd serve --reader`: a read replica's lifecycle (`server`) and the published generation
it answers from (`generation`)."""
