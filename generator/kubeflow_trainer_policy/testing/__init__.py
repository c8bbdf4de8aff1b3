"""Running Rego unit tests and gator-format suites on the engine."""
