"""One module per page of the UI, each `routes(site)`: its page, its htmx partial and its `/api/…` JSON."""
