"""PodSets of a TrainJob (what it will request, computed the Trainer's way) and exact Kubernetes quantities."""
