package trainertrainjobmlpolicy

import data.lib.trainer.profile

train_job(runtime_name, trainer) := {"metadata": {"namespace": "team-a", "name": "job"}, "spec": {"runtimeRef": {"name": runtime_name}, "trainer": trainer}}

request_of(runtime_name, trainer) := {"review": {"operation": "CREATE", "object": train_job(runtime_name, trainer)}}

test_the_model_comes_from_a_torchtune_runtime_s_name if {
	model == "llama3_2/1B" with input as request_of("torchtune-llama3.2-1b", {})
	model == "qwen2_5/1.5B" with input as request_of("torchtune-qwen2.5-1.5b", {})
	model == "" with input as request_of("torch-distributed", {})
}

test_every_release_supports_the_largest_llama if {
	"llama3_3/70B" in supported_models
	not "" in supported_models
}

test_num_nodes_is_1_when_unset if {
	num_nodes == 1 with input as request_of("torch", {})
	num_nodes == 4 with input as request_of("torch", {"numNodes": 4})
}

test_integers_are_whole_numbers if {
	integer(2)
	not integer(2.5)
	not integer("2")
}

test_the_release_s_checks if {
	settings.num_proc_per_node_int_or_string == object.get({"v2.0": true, "v2.1": true}, profile.name, false)
	settings.torchtune_lora_args_checks == object.get({"v2.3": true}, profile.name, false)
}

test_gpus_per_node_count_any_gpu_resource_rounded_up if {
	gpus_per_node == 2 with input as request_of("torchtune-llama3.2-1b", {"resourcesPerNode": {"limits": {"nvidia.com/gpu": "1500m"}}})
	gpus_per_node == 1 with input as request_of("torchtune-llama3.2-1b", {"resourcesPerNode": {"requests": {"amd.com/GPU": 1}}})
}

test_the_checks_later_releases_added if {
	settings.mpi_reserved_envs == object.get({"v2.3": true}, profile.name, false)
	settings.torch_env_injection == object.get({"v2.3": true}, profile.name, false)
	settings.flux_checks == object.get({"v2.2": true, "v2.3": true}, profile.name, false)
	settings.flux_trainer_num_proc_per_node == object.get({"v2.3": true}, profile.name, false)
	settings.volcano_queue_annotations == object.get({"v2.0": "none", "v2.1": "trainjob"}, profile.name, "patches")
}

patched_request(patches) := {"review": {"operation": "CREATE", "object": {"metadata": {"namespace": "team-a", "name": "job"}, "spec": {"runtimeRef": {"name": "r"}, "runtimePatches": patches}}}}

test_patched_jobs_are_read_only_from_runtime_patches if {
	jobs := patched_jobs with input as patched_request([{"trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [{"name": "node"}, "x"]}}}}, "y"])
	jobs == [{"name": "node"} | profile.override_field == "runtimePatches"]
}

test_the_last_annotation_source_that_sets_the_queue_wins if {
	patches := [
		{"trainingRuntimeSpec": {"template": {"metadata": {"annotations": {volcano_queue_key: ""}}}}},
		{"trainingRuntimeSpec": {"template": {"metadata": {"annotations": {"other": "a"}}}}},
		{"trainingRuntimeSpec": {"template": {"metadata": {"annotations": {volcano_queue_key: "q"}}}}},
	]
	queues := volcano_queues with input as patched_request(patches)
	queues == [q | settings.volcano_queue_annotations == "patches"; some q in ["", "q"]]
}
