"""The real OPA in the loop: the pinned opa of every supported Gatekeeper (kubeflow_trainer_policy.pinned), or a
user's `opa`."""
