"""kubeflow-trainer-policy: rule catalog, renderers, the OPA engine layer and the Gatekeeper runner."""
