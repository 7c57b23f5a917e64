"""Built-in example models (import `sizeup.examples.zoo` explicitly: it needs torch)."""
