"""The Kubeflow Trainer's own validation code as an oracle: tools/trainer-oracle built once per release tag from the
Go module proxy (build.py) and run as a long-lived process answering AdmissionReviews (run.py)."""
