# METADATA
# title: {{ rule.title }}
# description: >-
{{ rule.description | comment(3) }}
# custom:
#   id: {{ rule.id }}
#   profile: {{ profile.name }}
package {{ rule.package }}

{% if settings.torchtune_qlora_checks %}
import data.lib.trainer.quantity
{% endif %}
import data.lib.trainer.review
import data.lib.trainer.runtime
import data.lib.trainer.violations

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
	review.applies_to({{ rule.rego_operations(profile) }})
	lookup.found
}

mpi if is_object(review.get(ml, ["mpi"], null))

{% if settings.num_proc_per_node_int_or_string %}
# METADATA
# title: MPI numProcPerNode
# description: Invalid when an MPI TrainJob sets numProcPerNode to anything but an integer (int-or-string until v2.1).
violation contains v if {
	checked
	mpi
	num_proc_per_node != null
	not integer(num_proc_per_node)
	v := violations.make("spec.trainer.numProcPerNode", "Invalid", "must have an int value for MPI TrainJob")
}

{% endif %}
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
# description: >-
#   A Torch runtime and a TrainJob with spec.trainer{{ " and spec.trainer.numProcPerNode set (v2.0/v2.1)" if settings.num_proc_per_node_int_or_string else "" }}.
torch if {
	checked
	is_object(review.get(ml, ["torch"], null))
	is_object(trainer)
{% if settings.num_proc_per_node_int_or_string %}
	num_proc_per_node != null
{% endif %}
}

{% if settings.num_proc_per_node_int_or_string %}
# METADATA
# title: Torch numProcPerNode
# description: Invalid when numProcPerNode is a string other than auto, cpu or gpu.
violation contains v if {
	torch
	is_string(num_proc_per_node)
	not num_proc_per_node in {"auto", "cpu", "gpu"}
	v := violations.make("spec.trainer.numProcPerNode", "Invalid", "must have an int value or [auto cpu gpu]")
}

{% endif %}
reserved_envs := {"PET_NNODES", "PET_NPROC_PER_NODE", "PET_NODE_RANK", "PET_MASTER_ADDR", "PET_MASTER_PORT"}

configured_reserved := {name |
	some env in review.array(review.get(trainer, ["env"], []))
	name := review.get(env, ["name"], null)
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

{% if settings.xgboost_reserved_envs %}
xgboost_reserved_envs := {"DMLC_TRACKER_URI", "DMLC_TRACKER_PORT", "DMLC_TASK_ID", "DMLC_NUM_WORKER"}

# METADATA
# title: XGBoost reserved envs
# description: Forbidden at spec.trainer.env[i] for each DMLC_* variable the XGBoost plugin injects.
violation contains v if {
	checked
	is_object(review.get(ml, ["xgboost"], null))
	is_object(trainer)
	some i, env in review.array(review.get(trainer, ["env"], []))
	name := review.get(env, ["name"], null)
	name in xgboost_reserved_envs
	v := violations.make(sprintf("spec.trainer.env[%d]", [i]), "Forbidden", sprintf("%s is reserved for the XGBoost runtime", [name]))
}

{% endif %}
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

{# The release's TorchTuneSupportedPretrainedModels (MLPolicySettings.torchtune_models says why v2.0 differs). #}
supported_models := {{ "{" ~ (settings.torchtune_models | map("tojson") | join(", ")) ~ "}" }}

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

{% if settings.torchtune_qlora_checks or settings.torchtune_lora_args_checks %}
args := [a | some a in review.array(review.get(trainer, ["args"], [])); is_string(a)]

{% endif %}
{% if settings.torchtune_qlora_checks %}
# METADATA
# title: qlora
# description: "Upstream's QLoRA choice: one node, an arg containing model.quantize_base and none containing model.use_dora."
qlora if {
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
	counts := [ceil(x) |
		some name, q in review.get(resources_per_node, [list], {})
		is_string(name)
		contains(lower(name), "gpu")
		x := quantity.parse(q)
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

{% endif %}
{% if settings.torchtune_lora_args_checks %}
# METADATA
# title: LoRA multi-node
# description: Invalid when numNodes > 1 and an arg contains model.lora_attn_modules.
violation contains v if {
	torchtune
	num_nodes > 1
	some a in args
	contains(a, "model.lora_attn_modules")
	v := violations.make("spec.trainer.numNodes", "Invalid", "LoRA fine-tuning is not supported for multi-node training in TorchTune")
}

immutable_configs := {"output_dir", "tokenizer.path", "checkpointer.checkpoint_dir", "tokenizer.merges_file"}

# METADATA
# title: immutable args
# description: Invalid for each arg whose key (before the first =) is a config the runtime manages.
violation contains v if {
	torchtune
	some i, a in review.array(review.get(trainer, ["args"], []))
	is_string(a)
	key := split(a, "=")[0]
	key in immutable_configs
	v := violations.make(sprintf("spec.trainer.args[%d]", [i]), "Invalid", sprintf("must not set immutable config %q in trainer args; it is managed by the runtime", [key]))
}

{% endif %}
