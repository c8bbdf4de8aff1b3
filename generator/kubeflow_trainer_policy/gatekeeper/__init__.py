"""A Gatekeeper-faithful runner: templates, constraints, match, inventory, external_data."""
