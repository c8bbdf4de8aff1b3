"""External data provider for JobSet state (Gatekeeper's externaldata.gatekeeper.sh/v1beta1 protocol)."""
