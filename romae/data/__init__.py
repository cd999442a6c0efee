"""Data generators and loaders, one small module per dataset (deterministic under a seed, vectorised)."""
