"""Read-only analyses over a parsed function; each returns frozen data."""
