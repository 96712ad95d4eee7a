"""The OpenAI-compatible HTTP server (``tokensieve serve``)."""
