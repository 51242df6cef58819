"""The release audit: run every attack that applies to a model and report what they found,
as JSON for machines and one self-contained HTML page for people (`treeleaks audit`)."""
