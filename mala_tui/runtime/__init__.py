"""The imperative shell: asyncio, processes, files. It carries out what the core decides."""
