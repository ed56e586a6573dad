"""ragd over the Model Context Protocol: the server's tools (`tools`, for stdio and HTTP),
its Streamable HTTP endpoint on /mcp behind its gates (`endpoint`) and the bounded table of
its sessions (`sessions`)."""
