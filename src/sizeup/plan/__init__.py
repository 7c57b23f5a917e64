"""Planning: scenarios, the configuration search, serving capacity, cost, edge fits and the sheet."""
