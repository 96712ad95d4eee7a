"""Shared test helpers: real vocabulary files, tiny vocabularies and independent oracles."""
