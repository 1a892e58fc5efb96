"""One module per CLI verb (see bloatlab.cli)."""
