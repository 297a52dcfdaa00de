"""The REST contract: request and response bodies, separate from the domain models."""
