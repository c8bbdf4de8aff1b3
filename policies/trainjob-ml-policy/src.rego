# METADATA
# title: TrainJob settings fit its runtime's MPI, Torch, XGBoost, Flux or Volcano policy (reserved envs, torchtune models)
# description: >-
#   The Trainer's MPI and Torch plugin checks, CREATE and UPDATE (and audit), against the mlPolicy of the runtime
#   read from data.inventory (a runtime that cannot be read is reported by trainjob-runtime-ref, not here). MPI:
#   v2.0/v2.1 require an integer spec.trainer.numProcPerNode (`must have an int value for MPI TrainJob`); with
#   runLauncherAsNode and numNodes >= 2 the runtime needs jobs launcher and node. Torch (v2.0/v2.1 only when
#   numProcPerNode is set; v2.2+ whenever spec.trainer is set): v2.0/v2.1 accept string numProcPerNode only as auto,
#   cpu or gpu; spec.trainer.env must not set PET_NNODES, PET_NPROC_PER_NODE, PET_NODE_RANK, PET_MASTER_ADDR,
#   PET_MASTER_PORT. torchtune (command exactly [tune, run]): the model from the runtime name must be llama3_2/1B,
#   llama3_2/3B, llama3_3/70B or qwen2_5/1.5B (upstream's constants from v2.1; v2.0 also admits the shared spec's
#   llama3_2/7B, which the pre-release constants list, since the v2.0.0 set is unconfirmed), numNodes > 1 only for
#   llama3_3/70B; v2.1+ add upstream's QLoRA checks (qwen2_5/1.5B refused; distributed QLoRA on llama3_2/1B and 3B
#   refused), v2.3 the LoRA multi-node and runtime-managed trainer args checks. XGBoost (v2.2+, whenever
#   spec.trainer is set): spec.trainer.env[i] must not set DMLC_TRACKER_URI, DMLC_TRACKER_PORT, DMLC_TASK_ID or
#   DMLC_NUM_WORKER (Forbidden, `<NAME> is reserved for the XGBoost runtime`). An unset numNodes counts as 1
#   (v2.0/v2.1 upstream dereference it unchecked and fail with a server error). The numProcPerNode type checks are
#   gone from v2.2, whose CRD types the field int32. v2.3: MPI refuses the OMPI_MCA_* envs it sets, and each
#   container of the runtime's torch.envInjection targets must exist in its job (Invalid at spec.runtimeRef). Flux
#   (v2.2+): numProcPerNode below 1 (v2.3 reads spec.trainer.numProcPerNode first) and an initContainer
#   flux-installer in the job node are Invalid. Volcano (v2.1+): an empty scheduling.volcano.sh/queue-name
#   annotation is Invalid. Containers and annotations are read from the runtime template merged with the
#   runtime patches (v2.1: annotations with the TrainJob's spec.annotations), as upstream validates.
# custom:
#   id: trainjob-ml-policy
#   version: 1.2.1
#   specSection: E6-E7
#   rationale: >-
#     torchrun's PET_* variables, the MPI launcher layout and the torchtune recipes are set by the Trainer from the
#     runtime; a TrainJob that overrides or contradicts them is admitted by the API server but trains wrongly or not
#     at all. Gatekeeper reproduces the webhook's answer for audit and CI.
#   match:
#     - apiGroups: [trainer.kubeflow.org]
#       kinds: [TrainJob]
#   operations: [CREATE, UPDATE]
#   inventory:
#     - {group: trainer.kubeflow.org, version: v1alpha1, kind: TrainingRuntime}
#     - {group: trainer.kubeflow.org, version: v1alpha1, kind: ClusterTrainingRuntime}
package trainertrainjobmlpolicy

import data.lib.trainer.nanos
import data.lib.trainer.profile
import data.lib.trainer.review
import data.lib.trainer.runtime
import data.lib.trainer.violations

# METADATA
# title: releases
# description: >-
#   What each release checks. num_proc_per_node_int_or_string: numProcPerNode is int-or-string (v2.0, v2.1: the
#   MPI int check, the Torch string check, Torch checked only when it is set). torchtune_models: the release's
#   TorchTuneSupportedPretrainedModels (v2.0's set is not confirmed: the union of both readings of the release, so
#   that nothing the release admits is denied; docs/upstream/checks.md). torchtune_qlora_checks: the QLoRA checks
#   (v2.1+). torchtune_lora_args_checks: LoRA multi-node and immutable trainer args (v2.3). xgboost_reserved_envs:
#   the DMLC_* envs the XGBoost plugin injects (v2.2+). mpi_reserved_envs: the OMPI_MCA_* envs (v2.3).
#   torch_env_injection: the runtime's envInjection targets exist (v2.3). flux_checks: the Flux plugin (v2.2+);
#   flux_trainer_num_proc_per_node: its numProcPerNode check reads spec.trainer.numProcPerNode first (v2.3).
#   volcano_queue_annotations: where the Volcano queue annotation comes from besides the runtime template's
#   metadata: none (no Volcano plugin, v2.0), the TrainJob's spec.annotations (v2.1), the runtime patches (v2.2+).
releases := {
	"v2.0": {
		"num_proc_per_node_int_or_string": true,
		"torchtune_models": {"llama3_2/1B", "llama3_2/3B", "llama3_2/7B", "llama3_3/70B", "qwen2_5/1.5B"},
		"torchtune_qlora_checks": false,
		"torchtune_lora_args_checks": false,
		"xgboost_reserved_envs": false,
		"mpi_reserved_envs": false,
		"torch_env_injection": false,
		"flux_checks": false,
		"flux_trainer_num_proc_per_node": false,
		"volcano_queue_annotations": "none",
	},
	"v2.1": {
		"num_proc_per_node_int_or_string": true,
		"torchtune_models": later_models,
		"torchtune_qlora_checks": true,
		"torchtune_lora_args_checks": false,
		"xgboost_reserved_envs": false,
		"mpi_reserved_envs": false,
		"torch_env_injection": false,
		"flux_checks": false,
		"flux_trainer_num_proc_per_node": false,
		"volcano_queue_annotations": "trainjob",
	},
	"v2.2": {
		"num_proc_per_node_int_or_string": false,
		"torchtune_models": later_models,
		"torchtune_qlora_checks": true,
		"torchtune_lora_args_checks": false,
		"xgboost_reserved_envs": true,
		"mpi_reserved_envs": false,
		"torch_env_injection": false,
		"flux_checks": true,
		"flux_trainer_num_proc_per_node": false,
		"volcano_queue_annotations": "patches",
	},
	"v2.3": {
		"num_proc_per_node_int_or_string": false,
		"torchtune_models": later_models,
		"torchtune_qlora_checks": true,
		"torchtune_lora_args_checks": true,
		"xgboost_reserved_envs": true,
		"mpi_reserved_envs": true,
		"torch_env_injection": true,
		"flux_checks": true,
		"flux_trainer_num_proc_per_node": true,
		"volcano_queue_annotations": "patches",
	},
}

later_models := {"llama3_2/1B", "llama3_2/3B", "llama3_3/70B", "qwen2_5/1.5B"}

settings := releases[profile.name]

trainjob := review.new_object

# METADATA
# title: lookup
# description: Whether the referenced runtime can be read; a runtime that cannot be read is trainjob-runtime-ref's to report.
lookup := runtime.lookup(trainjob)

ml := runtime.requested_ml_policy

trainer := t if {
	t := review.get(trainjob, ["spec", "trainer"], null)
	is_object(t)
}

num_proc_per_node := review.get(trainer, ["numProcPerNode"], null)

# METADATA
# title: num_nodes
# description: spec.trainer.numNodes, 1 when unset (upstream's ptr.Deref; v2.0/v2.1 torchtune dereference it unchecked).
num_nodes := n if {
	n := review.get(trainer, ["numNodes"], null)
	is_number(n)
} else := 1

integer(value) if {
	is_number(value)
	floor(value) == value
}

checked if {
	review.applies_to({"CREATE", "UPDATE"})
	lookup.found
}

mpi if is_object(review.get(ml, ["mpi"], null))

# METADATA
# title: MPI numProcPerNode
# description: Invalid when an MPI TrainJob sets numProcPerNode to anything but an integer (int-or-string until v2.1).
violation contains v if {
	settings.num_proc_per_node_int_or_string
	checked
	mpi
	num_proc_per_node != null
	not integer(num_proc_per_node)
	v := violations.make("spec.trainer.numProcPerNode", "Invalid", "must have an int value for MPI TrainJob")
}

# METADATA
# title: MPI launcher as node
# description: >-
#   Invalid when numNodes >= 2 with runLauncherAsNode and the runtime lacks a job named launcher or node.
violation contains v if {
	checked
	mpi
	num_nodes >= 2
	review.get(ml, ["mpi", "runLauncherAsNode"], null) == true
	not launcher_and_node
	v := violations.make("spec.trainer.numNodes", "Invalid", "must have 1 when MPI trainingRuntime with enabled runLauncherAsNode does not have either launcher and node")
}

launcher_and_node if {
	names := runtime.requested_job_names
	"launcher" in names
	"node" in names
}

# METADATA
# title: torch
# description: A Torch runtime and a TrainJob with spec.trainer (v2.0/v2.1 also spec.trainer.numProcPerNode set).
torch if {
	checked
	is_object(review.get(ml, ["torch"], null))
	is_object(trainer)
	torch_checked
}

torch_checked if not settings.num_proc_per_node_int_or_string

torch_checked if num_proc_per_node != null

# METADATA
# title: Torch numProcPerNode
# description: Invalid (v2.0/v2.1) when numProcPerNode is a string other than auto, cpu or gpu.
violation contains v if {
	settings.num_proc_per_node_int_or_string
	torch
	is_string(num_proc_per_node)
	not num_proc_per_node in {"auto", "cpu", "gpu"}
	v := violations.make("spec.trainer.numProcPerNode", "Invalid", "must have an int value or [auto cpu gpu]")
}

reserved_envs := {"PET_NNODES", "PET_NPROC_PER_NODE", "PET_NODE_RANK", "PET_MASTER_ADDR", "PET_MASTER_PORT"}

# A plain reference per entry, not a function call: env may hold tens of thousands of entries (a reference
# into a non-object is simply undefined).
configured_reserved := {name |
	some env in review.array(review.get(trainer, ["env"], []))
	name := env.name
	name in reserved_envs
}

# METADATA
# title: reserved envs
# description: Invalid when spec.trainer.env sets a PET_* variable torchrun gets from the Trainer (sorted list).
violation contains v if {
	torch
	count(configured_reserved) > 0
	v := violations.make("spec.trainer.env", "Invalid", sprintf("must not have reserved envs, invalid envs configured: [%s]", [concat(" ", sort(configured_reserved))]))
}

xgboost_reserved_envs := {"DMLC_TRACKER_URI", "DMLC_TRACKER_PORT", "DMLC_TASK_ID", "DMLC_NUM_WORKER"}

# METADATA
# title: XGBoost reserved envs
# description: Forbidden (v2.2+) at spec.trainer.env[i] for each DMLC_* variable the XGBoost plugin injects.
violation contains v if {
	settings.xgboost_reserved_envs
	checked
	is_object(review.get(ml, ["xgboost"], null))
	is_object(trainer)
	some i, env in review.array(review.get(trainer, ["env"], []))
	name := env.name
	name in xgboost_reserved_envs
	v := violations.make(sprintf("spec.trainer.env[%d]", [i]), "Forbidden", sprintf("%s is reserved for the XGBoost runtime", [name]))
}

torchtune if {
	torch
	review.get(trainer, ["command"], null) == ["tune", "run"]
}

# METADATA
# title: model
# description: 'The model of a torchtune runtime name `<x>-<a>-<b>`, as `<a with . as _>/<B>`; "" for other names.'
model := sprintf("%s/%s", [replace(parts[1], ".", "_"), upper(parts[2])]) if {
	name := review.get(trainjob, ["spec", "runtimeRef", "name"], "")
	is_string(name)
	parts := split(name, "-")
	count(parts) == 3
} else := ""

supported_models := settings.torchtune_models

# METADATA
# title: torchtune model
# description: Invalid when a torchtune TrainJob's runtime name gives no supported model.
violation contains v if {
	torchtune
	not model in supported_models
	v := violations.make("spec.runtimeRef.name", "Invalid", sprintf("must have a supported pretrained model, invalid model configured: %s", [model]))
}

# METADATA
# title: torchtune nodes
# description: Invalid when numNodes > 1 for any model but llama3_3/70B.
violation contains v if {
	torchtune
	num_nodes > 1
	model != "llama3_3/70B"
	v := violations.make("spec.trainer.numNodes", "Invalid", sprintf("must be 1 for %s model", [model]))
}

args := [a | some a in review.array(review.get(trainer, ["args"], [])); is_string(a)]

# METADATA
# title: qlora
# description: >-
#   Upstream's QLoRA choice (v2.1+): one node, an arg containing model.quantize_base and none containing
#   model.use_dora.
qlora if {
	settings.torchtune_qlora_checks
	num_nodes == 1
	some a in args
	contains(a, "model.quantize_base")
	not dora
}

dora if {
	some a in args
	contains(a, "model.use_dora")
}

# METADATA
# title: resources_per_node
# description: spec.trainer.resourcesPerNode, else the resources of the runtime's trainer `node` container.
resources_per_node := r if {
	r := review.get(trainer, ["resourcesPerNode"], null)
	r != null
} else := runtime_node_resources[0] if {
	count(runtime_node_resources) > 0
} else := {}

runtime_node_resources := [r |
	some job in runtime.requested_jobs
	object.get(job, ["template", "metadata", "labels", "trainer.kubeflow.org/trainjob-ancestor-step"], null) == "trainer"
	containers := object.get(job, ["template", "spec", "template", "spec", "containers"], [])
	is_array(containers)
	some c in containers
	is_object(c)
	object.get(c, "name", null) == "node"
	r := object.get(c, "resources", {})
]

# METADATA
# title: gpus
# description: GetNumGPUPerNode's count in requests or limits (a resource whose name contains gpu), rounded up.
gpus(list) := max(counts) if {
	counts := [nanos.ceil_units(n) |
		some name, q in review.get(resources_per_node, [list], {})
		is_string(name)
		contains(lower(name), "gpu")
		n := nanos.parse(q)
	]
	count(counts) > 0
} else := 0

gpus_per_node := gpus("requests") if {
	gpus("requests") != 0
} else := gpus("limits")

# METADATA
# title: single_device
# description: "One process or one GPU per node: the single-device QLoRA config."
single_device if num_proc_per_node == 1

single_device if gpus_per_node == 1

# METADATA
# title: QLoRA on qwen
# description: Invalid when QLoRA is chosen for qwen2_5/1.5B.
violation contains v if {
	torchtune
	qlora
	model == "qwen2_5/1.5B"
	v := violations.make("spec.runtimeRef.name", "Invalid", sprintf("QLoRA is not supported for %s model", [model]))
}

qlora_errors := [["spec.trainer.numProcPerNode", "must be auto or 1 for %s model when using QLoRA"], ["spec.trainer.resourcesPerNode", "must have gpu resource with value 1 for %s model when using QLoRA"]]

# METADATA
# title: distributed QLoRA on small llama
# description: Two Invalid errors when the distributed QLoRA config is chosen for llama3_2/1B or 3B.
violation contains v if {
	torchtune
	qlora
	not single_device
	model in {"llama3_2/1B", "llama3_2/3B"}
	some [path, detail] in qlora_errors
	v := violations.make(path, "Invalid", sprintf(detail, [model]))
}

# METADATA
# title: LoRA multi-node
# description: Invalid (v2.3) when numNodes > 1 and an arg contains model.lora_attn_modules.
violation contains v if {
	settings.torchtune_lora_args_checks
	torchtune
	num_nodes > 1
	some a in args
	contains(a, "model.lora_attn_modules")
	v := violations.make("spec.trainer.numNodes", "Invalid", "LoRA fine-tuning is not supported for multi-node training in TorchTune")
}

immutable_configs := {"output_dir", "tokenizer.path", "checkpointer.checkpoint_dir", "tokenizer.merges_file"}

# METADATA
# title: immutable args
# description: Invalid (v2.3) for each arg whose key (before the first =) is a config the runtime manages.
violation contains v if {
	settings.torchtune_lora_args_checks
	torchtune
	some i, a in review.array(review.get(trainer, ["args"], []))
	is_string(a)
	key := split(a, "=")[0]
	key in immutable_configs
	v := violations.make(sprintf("spec.trainer.args[%d]", [i]), "Invalid", sprintf("must not set immutable config %q in trainer args; it is managed by the runtime", [key]))
}

mpi_reserved_envs := {"OMPI_MCA_orte_default_hostfile", "OMPI_MCA_plm_rsh_args", "OMPI_MCA_orte_keep_fqdn_hostnames", "OMPI_MCA_orte_set_default_slots"}

configured_mpi_reserved := {name |
	some env in review.array(review.get(trainer, ["env"], []))
	name := env.name
	name in mpi_reserved_envs
}

# METADATA
# title: MPI reserved envs
# description: >-
#   Invalid (v2.3) when an MPI TrainJob's spec.trainer.env sets an OMPI_MCA_* variable the MPI plugin sets
#   (sorted list, the Torch check's wording).
violation contains v if {
	settings.mpi_reserved_envs
	checked
	mpi
	is_object(trainer)
	count(configured_mpi_reserved) > 0
	v := violations.make("spec.trainer.env", "Invalid", sprintf("must not have reserved envs, invalid envs configured: [%s]", [concat(" ", sort(configured_mpi_reserved))]))
}

# METADATA
# title: patched_jobs
# description: >-
#   The replicated jobs of every runtime patch (v2.2+), in order: upstream validates the runtime template after
#   merging them (strategic merge by name), so a container a patch adds is part of its job.
patched_jobs := [job |
	profile.override_field == "runtimePatches"
	some patch in review.array(review.get(trainjob, ["spec", "runtimePatches"], []))
	some job in review.array(review.get(patch, ["trainingRuntimeSpec", "template", "spec", "replicatedJobs"], []))
	is_object(job)
]

# METADATA
# title: merged_container_names
# description: >-
#   Names of the `kind` (containers or initContainers) of the job named `job_name` in the runtime template merged
#   with the runtime patches.
merged_container_names(job_name, kind) := {name |
	some job in array.concat(runtime.requested_jobs, patched_jobs)
	object.get(job, "name", null) == job_name
	some c in review.array(object.get(job, ["template", "spec", "template", "spec", kind], []))
	name := c.name
	is_string(name)
}

torch_policy := p if {
	p := review.get(ml, ["torch"], null)
	is_object(p)
}

# METADATA
# title: Torch envInjection targets
# description: >-
#   Invalid at spec.runtimeRef (v2.3) for each container of the runtime's mlPolicy.torch.envInjection targets that
#   the target job of the merged template has neither as a container nor as an initContainer (whether or not
#   spec.trainer is set).
violation contains v if {
	settings.torch_env_injection
	checked
	some target in review.array(review.get(torch_policy, ["envInjection", "targets"], []))
	job_name := review.get(target, ["jobName"], "")
	some container in review.array(review.get(target, ["containerNames"], []))
	is_string(container)
	not container in merged_container_names(job_name, "containers")
	not container in merged_container_names(job_name, "initContainers")
	v := violations.make("spec.runtimeRef", "Invalid", sprintf("envInjection target podSet %q container %q not found in runtime template", [job_name, container]))
}

flux_policy := p if {
	settings.flux_checks
	checked
	p := review.get(ml, ["flux"], null)
	is_object(p)
}

# METADATA
# title: flux_num_proc_per_node
# description: >-
#   The Flux plugin's numProcPerNode: spec.trainer.numProcPerNode when set (v2.3), else the runtime's
#   mlPolicy.flux.numProcPerNode; undefined when neither is a number.
flux_num_proc_per_node := n if {
	settings.flux_trainer_num_proc_per_node
	n := num_proc_per_node
	is_number(n)
} else := n if {
	n := review.get(flux_policy, ["numProcPerNode"], null)
	is_number(n)
}

# METADATA
# title: Flux numProcPerNode
# description: >-
#   Invalid (v2.2+) when a Flux TrainJob's numProcPerNode is below 1 (from v2.3 the TrainJob's own value counts;
#   the runtime's value below 1 the runtime CRD already refuses).
violation contains v if {
	is_object(flux_policy)
	flux_num_proc_per_node < 1
	v := violations.make("spec.trainer.numProcPerNode", "Invalid", "must be greater than or equal to 1 for Flux TrainJob")
}

# METADATA
# title: Flux installer reserved
# description: >-
#   Invalid (v2.2+) when a Flux runtime's job `node`, merged with the runtime patches, has an initContainer named
#   flux-installer (the plugin adds its own).
violation contains v if {
	is_object(flux_policy)
	"flux-installer" in merged_container_names("node", "initContainers")
	v := violations.make("spec.trainer.initContainers", "Invalid", "InitContainer 'flux-installer' is reserved")
}

volcano_queue_key := "scheduling.volcano.sh/queue-name"

# The runtime template's metadata annotations, {} when absent or the runtime cannot be read.
runtime_annotations := a if {
	a := object.get(runtime.requested, ["spec", "template", "metadata", "annotations"], {})
} else := {}

# METADATA
# title: annotation_sources
# description: >-
#   The annotation maps upstream merges into the runtime info, later ones winning: the runtime template's
#   metadata, then (v2.1) the TrainJob's spec.annotations or (v2.2+) each runtime patch's template metadata.
annotation_sources := array.concat([runtime_annotations], later) if {
	settings.volcano_queue_annotations == "trainjob"
	later := [review.get(trainjob, ["spec", "annotations"], {})]
} else := array.concat([runtime_annotations], later) if {
	settings.volcano_queue_annotations == "patches"
	later := [a |
		some patch in review.array(review.get(trainjob, ["spec", "runtimePatches"], []))
		a := review.get(patch, ["trainingRuntimeSpec", "template", "metadata", "annotations"], {})
	]
}

volcano_queues := [q |
	some annotations in annotation_sources
	q := review.get(annotations, [volcano_queue_key], null)
	is_string(q)
]

# METADATA
# title: Volcano queue empty
# description: >-
#   Invalid (v2.1+) when a runtime with podGroupPolicy.volcano ends up with the annotation
#   scheduling.volcano.sh/queue-name set to "" (the last source that sets it wins).
violation contains v if {
	settings.volcano_queue_annotations != "none"
	checked
	is_object(object.get(runtime.requested, ["spec", "podGroupPolicy", "volcano"], null))
	count(volcano_queues) > 0
	volcano_queues[count(volcano_queues) - 1] == ""
	v := violations.make(sprintf("spec.annotations[%s]", [volcano_queue_key]), "Invalid", "Volcano queue name must not be empty")
}
