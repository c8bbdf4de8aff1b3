"""One module per rule (or family of rules): each defines module-level `Rule` objects, found by discovery."""
