"""Spec E6-E7 (research C8, C9): MPI and Torch checks of a TrainJob against its runtime's mlPolicy."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubeflow_trainer_policy.catalog.model import AUDIT, Case, Expected
from kubeflow_trainer_policy.catalog.trainjob_fixtures import job, mpi_runtime, override_entry, runtime, trainjob
from kubeflow_trainer_policy.profiles import Profile


@dataclass(frozen=True)
class MLPolicySettings:
    num_proc_per_node_int_or_string: bool
    """v2.0/v2.1: numProcPerNode is int-or-string (MPI int check, Torch string check; Torch runs only when set)."""
    torchtune_qlora_checks: bool
    """C9 QLoRA checks (v2.1+)."""
    torchtune_lora_args_checks: bool
    """C9 LoRA multi-node and immutable trainer args checks (v2.3)."""
    torchtune_models: tuple[str, ...]
    """Models a torchtune TrainJob may name (upstream's TorchTuneSupportedPretrainedModels)."""
    xgboost_reserved_envs: bool
    """v2.2+: the XGBoost plugin (kubeflow/trainer#3200) forbids the DMLC_* envs it injects."""
    mpi_reserved_envs: bool = False
    """v2.3: the MPI plugin refuses the OMPI_MCA_* envs it sets (constants.MPIReservedEnvNames)."""
    torch_env_injection: bool = False
    """v2.3: each container of the runtime's torch.envInjection targets must exist in its job."""
    flux_checks: bool = False
    """v2.2+: the Flux plugin's Validate (numProcPerNode >= 1, initContainer flux-installer reserved)."""
    flux_trainer_num_proc_per_node: bool = False
    """v2.3: the Flux numProcPerNode check reads spec.trainer.numProcPerNode before the runtime's."""
    volcano_queue_annotations: str = "none"
    """Where the Volcano queue annotation may also come from: none (no Volcano plugin, v2.0), the TrainJob's
    spec.annotations (v2.1), the runtime patches' template metadata (v2.2+)."""


LATER_MODELS = ("llama3_2/1B", "llama3_2/3B", "llama3_3/70B", "qwen2_5/1.5B")
"""v2.1 and later (the /v2 module's constants, with the qwen2.5 runtime and LoRA)."""
V2_0_MODELS = ("llama3_2/1B", "llama3_2/3B", "llama3_2/7B", "llama3_3/70B", "qwen2_5/1.5B")
"""v2.0: the release's set is not confirmed. The shared spec and the last pre-release constants
(toVersus/trainer@040b34e) list {llama3_2/1B, llama3_2/7B, llama3_3/70B}, and that period's table (torch TestValidate,
upstream index 5674117605) admits a torchtune-llama3.2-7b TrainJob's model; the 3B and qwen runtimes ship from the
same period and every later set is LATER_MODELS. A rule that backs up the webhook must not deny what the release
admits, so v2.0 takes the union of both readings."""


# What each Trainer release does, as the cases expect it (src.rego keeps the Rego's own table).
RELEASES = {
    "v2.0": MLPolicySettings(
        num_proc_per_node_int_or_string=True,
        torchtune_qlora_checks=False,
        torchtune_lora_args_checks=False,
        torchtune_models=V2_0_MODELS,
        xgboost_reserved_envs=False,
    ),
    "v2.1": MLPolicySettings(
        num_proc_per_node_int_or_string=True,
        torchtune_qlora_checks=True,
        torchtune_lora_args_checks=False,
        torchtune_models=LATER_MODELS,
        xgboost_reserved_envs=False,
        volcano_queue_annotations="trainjob",
    ),
    "v2.2": MLPolicySettings(
        num_proc_per_node_int_or_string=False,
        torchtune_qlora_checks=True,
        torchtune_lora_args_checks=False,
        torchtune_models=LATER_MODELS,
        xgboost_reserved_envs=True,
        flux_checks=True,
        volcano_queue_annotations="patches",
    ),
    "v2.3": MLPolicySettings(
        num_proc_per_node_int_or_string=False,
        torchtune_qlora_checks=True,
        torchtune_lora_args_checks=True,
        torchtune_models=LATER_MODELS,
        xgboost_reserved_envs=True,
        mpi_reserved_envs=True,
        torch_env_injection=True,
        flux_checks=True,
        flux_trainer_num_proc_per_node=True,
        volcano_queue_annotations="patches",
    ),
}

NPN = "spec.trainer.numProcPerNode"
NODES = "spec.trainer.numNodes"
NAME = "spec.runtimeRef.name"
TUNE = ["tune", "run"]


def _tune_runtime(name: str, resources: dict[str, Any] | None = None) -> dict[str, Any]:
    return runtime(
        name,
        [
            job("dataset-initializer", ancestor="dataset-initializer"),
            job("model-initializer", ancestor="model-initializer"),
            job("node", ancestor="trainer", resources=resources),
        ],
        ml_policy={"numNodes": 1, "torch": {}},
    )


def _without_ml_policy(rt: dict[str, Any]) -> dict[str, Any]:
    del rt["spec"]["mlPolicy"]
    return rt


def _model_error(model: str) -> Expected:
    return Expected(NAME, "Invalid", f"must have a supported pretrained model, invalid model configured: {model}")


def _torch_cases(p: Profile) -> list[Case]:
    torch = (runtime(),)
    env = [{"name": "PET_NNODES", "value": "2"}, {"name": "FOO"}, {"name": "PET_MASTER_ADDR"}]
    reserved = Expected(
        "spec.trainer.env",
        "Invalid",
        "must not have reserved envs, invalid envs configured: [PET_MASTER_ADDR PET_NNODES]",
    )
    string_npn = (
        ()
        if not RELEASES[p.name].num_proc_per_node_int_or_string
        else (Expected(NPN, "Invalid", "must have an int value or [auto cpu gpu]"),)
    )
    return [
        Case(
            "torch_plain_allowed",
            "A Torch TrainJob with ordinary settings.",
            trainjob(p, trainer={"numNodes": 2, "numProcPerNode": 2, "env": [{"name": "FOO", "value": "1"}]}),
            cluster=torch,
        ),
        Case(
            "torch_reserved_envs",
            "PET_* envs the Trainer sets: one Invalid listing them sorted, space-separated.",
            trainjob(p, trainer={"numProcPerNode": 2, "env": env}),
            cluster=torch,
            expected=(reserved,),
        ),
        Case(
            "torch_reserved_envs_without_num_proc_per_node",
            "v2.0/v2.1 run the Torch checks only when numProcPerNode is set; v2.2+ whenever spec.trainer is set.",
            trainjob(p, trainer={"env": env}),
            cluster=torch,
            expected=() if RELEASES[p.name].num_proc_per_node_int_or_string else (reserved,),
        ),
        Case(
            "torch_num_proc_per_node_string",
            "v2.0/v2.1: a string numProcPerNode other than auto, cpu, gpu; v2.2+ type it int32 (the CRD rejects "
            "strings) and dropped the check.",
            trainjob(p, trainer={"numProcPerNode": "8"}),
            cluster=torch,
            expected=string_npn,
        ),
        Case(
            "torch_num_proc_per_node_auto",
            "auto, cpu and gpu are allowed strings.",
            trainjob(p, trainer={"numProcPerNode": "auto"}),
            cluster=torch,
        ),
        Case(
            "non_torch_runtime_not_checked",
            "A runtime without mlPolicy.torch: no Torch check.",
            trainjob(p, trainer={"numProcPerNode": 2, "env": env}),
            cluster=(runtime(ml_policy={"numNodes": 1}),),
        ),
        Case(
            "runtime_without_ml_policy",
            "A runtime without mlPolicy: neither MPI nor Torch checks.",
            trainjob(p, trainer={"numProcPerNode": "4", "env": env}),
            cluster=(_without_ml_policy(runtime()),),
        ),
        Case(
            "audit_reports_reserved_envs",
            "Audit checks stored TrainJobs.",
            trainjob(p, trainer={"numProcPerNode": 2, "env": env}),
            operation=AUDIT,
            cluster=torch,
            expected=(reserved,),
        ),
        Case(
            "update_reports_reserved_envs",
            "UPDATE is checked too.",
            trainjob(p, trainer={"numProcPerNode": 2, "env": env}),
            operation="UPDATE",
            old_object=trainjob(p, trainer={"numProcPerNode": 2, "env": env}),
            cluster=torch,
            expected=(reserved,),
        ),
        Case(
            "delete_not_checked",
            "DELETE is not checked.",
            None,
            operation="DELETE",
            old_object=trainjob(p, trainer={"numProcPerNode": 2, "env": env}),
        ),
    ]


def _mpi_cases(p: Profile) -> list[Case]:
    mpi = (mpi_runtime(),)
    only_node = (mpi_runtime(jobs=["node"]),)
    layout = Expected(
        NODES,
        "Invalid",
        "must have 1 when MPI trainingRuntime with enabled runLauncherAsNode does not have either launcher and node",
    )

    def mpi_job(trainer: dict[str, Any]) -> dict[str, Any]:
        return trainjob(p, runtime="mpi-distributed", trainer=trainer)

    return [
        Case(
            "mpi_allowed",
            "Launcher and node jobs, integer numProcPerNode.",
            mpi_job({"numNodes": 3, "numProcPerNode": 4}),
            cluster=mpi,
        ),
        Case(
            "mpi_num_proc_per_node_string",
            "v2.0/v2.1: an MPI TrainJob's numProcPerNode must be an int (a quoted number is a string); "
            "removed in v2.2.",
            mpi_job({"numProcPerNode": "4"}),
            cluster=mpi,
            expected=(Expected(NPN, "Invalid", "must have an int value for MPI TrainJob"),)
            if RELEASES[p.name].num_proc_per_node_int_or_string
            else (),
        ),
        Case(
            "mpi_launcher_as_node_without_launcher",
            "runLauncherAsNode, numNodes 2 and no launcher job.",
            mpi_job({"numNodes": 2}),
            cluster=only_node,
            expected=(layout,),
        ),
        Case(
            "mpi_launcher_as_node_one_node",
            "numNodes 1 (or unset) needs no launcher job.",
            mpi_job({"numProcPerNode": 1}),
            cluster=only_node,
        ),
        Case(
            "mpi_launcher_not_as_node",
            "Without runLauncherAsNode the layout is not checked.",
            mpi_job({"numNodes": 4}),
            cluster=(mpi_runtime(jobs=["node"], launcher_as_node=False),),
        ),
    ]


def _unless_supported(p: Profile, model: str) -> tuple[Expected, ...]:
    return () if model in RELEASES[p.name].torchtune_models else (_model_error(model),)


def _torchtune_cases(p: Profile) -> list[Case]:
    small = (_tune_runtime("torchtune-llama3.2-1b"),)
    npn: dict[str, Any] = {"numProcPerNode": "auto"} if RELEASES[p.name].num_proc_per_node_int_or_string else {}

    def tune(runtime_name: str, **trainer: Any) -> dict[str, Any]:
        return trainjob(p, runtime=runtime_name, trainer={"command": TUNE, **npn, **trainer})

    qlora_args = ["model.quantize_base=True", "epochs=1"]
    distributed = (
        (
            Expected(NPN, "Invalid", "must be auto or 1 for llama3_2/1B model when using QLoRA"),
            Expected(
                "spec.trainer.resourcesPerNode",
                "Invalid",
                "must have gpu resource with value 1 for llama3_2/1B model when using QLoRA",
            ),
        )
        if RELEASES[p.name].torchtune_qlora_checks
        else ()
    )
    return [
        Case(
            "torchtune_supported_model",
            "torchtune-llama3.2-1b -> llama3_2/1B, one node.",
            tune("torchtune-llama3.2-1b"),
            cluster=small,
        ),
        Case(
            "torchtune_3b_model",
            "torchtune-llama3.2-3b -> llama3_2/3B is supported in every release (the 3B runtime ships from v2.0 on).",
            tune("torchtune-llama3.2-3b"),
            cluster=(_tune_runtime("torchtune-llama3.2-3b"),),
        ),
        Case(
            "torchtune_qwen_model",
            "torchtune-qwen2.5-1.5b -> qwen2_5/1.5B is supported (the shared spec's list lacks it).",
            tune("torchtune-qwen2.5-1.5b"),
            cluster=(_tune_runtime("torchtune-qwen2.5-1.5b"),),
        ),
        Case(
            "torchtune_llama3_2_7b_model",
            "torchtune-llama3.2-7b -> llama3_2/7B: v2.0 admits it (the shared spec's and the pre-release "
            "constants' model, see V2_0_MODELS); v2.1+ have 3B instead.",
            tune("torchtune-llama3.2-7b"),
            cluster=(_tune_runtime("torchtune-llama3.2-7b"),),
            expected=_unless_supported(p, "llama3_2/7B"),
        ),
        Case(
            "torchtune_unsupported_model",
            "torchtune-llama3.1-70b -> llama3_1/70B is in no release's model set (upstream's own invalid case).",
            tune("torchtune-llama3.1-70b"),
            cluster=(_tune_runtime("torchtune-llama3.1-70b"),),
            expected=(_model_error("llama3_1/70B"),),
        ),
        Case(
            "torchtune_unparsable_name",
            "A runtime name without exactly three parts gives the empty model.",
            tune("torch-distributed"),
            cluster=(runtime(),),
            expected=(_model_error(""),),
        ),
        Case(
            "torchtune_multi_node_small_model",
            "numNodes > 1 only for llama3_3/70B.",
            tune("torchtune-llama3.2-1b", numNodes=2),
            cluster=small,
            expected=(Expected(NODES, "Invalid", "must be 1 for llama3_2/1B model"),),
        ),
        Case(
            "torchtune_multi_node_70b",
            "llama3_3/70B may run on several nodes.",
            tune("torchtune-llama3.3-70b", numNodes=4),
            cluster=(_tune_runtime("torchtune-llama3.3-70b"),),
        ),
        Case(
            "torchtune_only_for_tune_run",
            "A command other than exactly [tune, run] is not torchtune.",
            trainjob(p, runtime="torch-distributed", trainer={"command": ["tune", "run", "x"], **npn}),
            cluster=(runtime(),),
        ),
        Case(
            "torchtune_qlora_qwen",
            "v2.1+: QLoRA (model.quantize_base, one node) is not supported for qwen2_5/1.5B.",
            tune("torchtune-qwen2.5-1.5b", args=qlora_args),
            cluster=(_tune_runtime("torchtune-qwen2.5-1.5b"),),
            expected=(Expected(NAME, "Invalid", "QLoRA is not supported for qwen2_5/1.5B model"),)
            if RELEASES[p.name].torchtune_qlora_checks
            else (),
        ),
        Case(
            "torchtune_qlora_distributed_small_llama",
            "v2.1+: distributed QLoRA (not one process, not one GPU per node) on llama3_2/1B: two errors.",
            tune("torchtune-llama3.2-1b", args=qlora_args, numProcPerNode=2),
            cluster=small,
            expected=distributed,
        ),
        Case(
            "torchtune_qlora_single_gpu",
            "One GPU per node (from the runtime's node container) picks the single-device QLoRA config.",
            tune("torchtune-llama3.2-1b", args=qlora_args, numProcPerNode=2),
            cluster=(_tune_runtime("torchtune-llama3.2-1b", {"limits": {"nvidia.com/gpu": 1}}),),
        ),
        Case(
            "torchtune_qlora_resources_per_node",
            "spec.trainer.resourcesPerNode replaces the runtime's resources: 2 GPUs is distributed.",
            tune(
                "torchtune-llama3.2-1b",
                args=qlora_args,
                numProcPerNode=2,
                resourcesPerNode={"requests": {"nvidia.com/gpu": "2"}},
            ),
            cluster=(_tune_runtime("torchtune-llama3.2-1b", {"limits": {"nvidia.com/gpu": 1}}),),
            expected=distributed,
        ),
        Case(
            "torchtune_dora_is_not_qlora",
            "model.use_dora turns QLoRA off.",
            tune("torchtune-llama3.2-1b", args=[*qlora_args, "model.use_dora=True"], numProcPerNode=2),
            cluster=small,
        ),
        Case(
            "torchtune_lora_multi_node",
            "v2.3: LoRA (model.lora_attn_modules) on several nodes.",
            tune("torchtune-llama3.3-70b", numNodes=2, args=["model.lora_attn_modules=[q_proj]"]),
            cluster=(_tune_runtime("torchtune-llama3.3-70b"),),
            expected=(
                Expected(NODES, "Invalid", "LoRA fine-tuning is not supported for multi-node training in TorchTune"),
            )
            if RELEASES[p.name].torchtune_lora_args_checks
            else (),
        ),
        Case(
            "torchtune_immutable_args",
            "v2.3: args that set a config the runtime manages, one error per arg at its index.",
            tune(
                "torchtune-llama3.2-1b", args=["output_dir=/tmp/x", "epochs=1", "tokenizer.path=/t", "output_dir_x=1"]
            ),
            cluster=small,
            expected=(
                Expected(
                    "spec.trainer.args[0]",
                    "Invalid",
                    'must not set immutable config "output_dir" in trainer args; it is managed by the runtime',
                ),
                Expected(
                    "spec.trainer.args[2]",
                    "Invalid",
                    'must not set immutable config "tokenizer.path" in trainer args; it is managed by the runtime',
                ),
            )
            if RELEASES[p.name].torchtune_lora_args_checks
            else (),
        ),
    ]


XGBOOST_RESERVED = ("DMLC_TRACKER_URI", "DMLC_TRACKER_PORT", "DMLC_TASK_ID", "DMLC_NUM_WORKER")


def _xgboost_cases(p: Profile) -> list[Case]:
    xgboost = (runtime("xgboost-distributed", ml_policy={"numNodes": 1, "xgboost": {}}),)
    checked = RELEASES[p.name].xgboost_reserved_envs

    def tj(env: list[dict[str, Any]]) -> dict[str, Any]:
        return trainjob(p, runtime="xgboost-distributed", trainer={"numNodes": 2, "env": env})

    def forbidden(i: int, name: str) -> Expected:
        return Expected(f"spec.trainer.env[{i}]", "Forbidden", f"{name} is reserved for the XGBoost runtime")

    env = [{"name": "DMLC_NUM_WORKER", "value": "8"}, {"name": "NTHREAD", "value": "4"}, {"name": "DMLC_TASK_ID"}]
    return [
        Case(
            "xgboost_plain_allowed",
            "An XGBoost TrainJob with its own envs.",
            tj([{"name": "NTHREAD", "value": "4"}]),
            cluster=xgboost,
        ),
        Case(
            "xgboost_reserved_envs",
            "v2.2+: each DMLC_* env the XGBoost plugin injects is Forbidden at its index (earlier releases have no "
            "XGBoost runtime).",
            tj(env),
            cluster=xgboost,
            expected=(forbidden(0, "DMLC_NUM_WORKER"), forbidden(2, "DMLC_TASK_ID")) if checked else (),
        ),
        Case(
            "xgboost_reserved_envs_on_torch_runtime",
            "DMLC_* envs are only reserved on an XGBoost runtime.",
            trainjob(p, trainer={"env": [{"name": "DMLC_TRACKER_URI", "value": "x"}]}),
            cluster=(runtime(),),
        ),
        Case(
            "xgboost_every_reserved_env",
            "v2.2+: DMLC_TRACKER_URI, DMLC_TRACKER_PORT, DMLC_TASK_ID and DMLC_NUM_WORKER.",
            tj([{"name": n, "value": "1"} for n in XGBOOST_RESERVED]),
            cluster=xgboost,
            expected=tuple(forbidden(i, n) for i, n in enumerate(XGBOOST_RESERVED)) if checked else (),
        ),
    ]


MPI_RESERVED = (
    "OMPI_MCA_orte_default_hostfile",
    "OMPI_MCA_plm_rsh_args",
    "OMPI_MCA_orte_keep_fqdn_hostnames",
    "OMPI_MCA_orte_set_default_slots",
)


def _mpi_reserved_env_cases(p: Profile) -> list[Case]:
    checked = RELEASES[p.name].mpi_reserved_envs
    env = [
        {"name": "OMPI_MCA_plm_rsh_args", "value": "-o X"},
        {"name": "FOO"},
        {"name": "OMPI_MCA_orte_default_hostfile"},
    ]
    return [
        Case(
            "mpi_reserved_envs",
            "v2.3: an MPI TrainJob's spec.trainer.env sets OMPI_MCA_* envs the MPI plugin sets: one Invalid listing "
            "them sorted, space-separated (mpi.go Validate, constants.MPIReservedEnvNames).",
            trainjob(p, runtime="mpi-distributed", trainer={"env": env}),
            cluster=(mpi_runtime(),),
            expected=(
                Expected(
                    "spec.trainer.env",
                    "Invalid",
                    "must not have reserved envs, invalid envs configured: "
                    "[OMPI_MCA_orte_default_hostfile OMPI_MCA_plm_rsh_args]",
                ),
            )
            if checked
            else (),
        ),
        Case(
            "mpi_every_reserved_env",
            "v2.3: all four OMPI_MCA_* names are reserved.",
            trainjob(p, runtime="mpi-distributed", trainer={"env": [{"name": n, "value": "1"} for n in MPI_RESERVED]}),
            cluster=(mpi_runtime(),),
            expected=(
                Expected(
                    "spec.trainer.env",
                    "Invalid",
                    "must not have reserved envs, invalid envs configured: [" + " ".join(sorted(MPI_RESERVED)) + "]",
                ),
            )
            if checked
            else (),
        ),
        Case(
            "mpi_reserved_envs_on_torch_runtime",
            "OMPI_MCA_* envs are only reserved on an MPI runtime.",
            trainjob(p, trainer={"env": env}),
            cluster=(runtime(),),
        ),
    ]


RUNTIME_REF = "trainjob-runtime-ref"


def _init_container_missing(p: Profile) -> Expected:
    """What trainjob-runtime-ref reports for a patch of an initContainer the runtime's node job lacks."""
    return Expected(
        p.override_path, "Invalid", "must not have initContainer that doesn't exist in the runtime job node"
    )


def _env_injection_runtime(targets: list[dict[str, Any]]) -> dict[str, Any]:
    return runtime(ml_policy={"numNodes": 1, "torch": {"envInjection": {"targets": targets}}})


def _env_injection_cases(p: Profile) -> list[Case]:
    checked = RELEASES[p.name].torch_env_injection

    def missing(job_name: str, container_name: str) -> Expected:
        return Expected(
            "spec.runtimeRef",
            "Invalid",
            f'envInjection target podSet "{job_name}" container "{container_name}" not found in runtime template',
        )

    return [
        Case(
            "torch_env_injection_targets_exist",
            "A target's containers may be an initContainer (setup) or a container (sidecar) of its job.",
            trainjob(p),
            cluster=(_env_injection_runtime([{"jobName": "node", "containerNames": ["setup", "sidecar"]}]),),
        ),
        Case(
            "torch_env_injection_target_missing",
            "v2.3: a target container its job lacks, and a target job the runtime lacks: one Invalid at "
            "spec.runtimeRef per missing container, whether or not spec.trainer is set (torch.go "
            "validateEnvInjectionTargets).",
            trainjob(p),
            cluster=(
                _env_injection_runtime(
                    [
                        {"jobName": "node", "containerNames": ["setup", "missing-container"]},
                        {"jobName": "missing-job", "containerNames": ["preflight-check"]},
                    ]
                ),
            ),
            expected=(missing("node", "missing-container"), missing("missing-job", "preflight-check"))
            if checked
            else (),
        ),
        Case(
            "torch_env_injection_container_from_runtime_patch",
            "v2.3: upstream validates the template merged with the runtime patches, so a patch that adds the target "
            "initContainer satisfies the target (trainjob-runtime-ref, checking the patch against the runtime before "
            "the merge, refuses the patch itself).",
            trainjob(p, overrides=[override_entry(p, ["node"], init_containers=[{"name": "preflight"}])]),
            cluster=(_env_injection_runtime([{"jobName": "node", "containerNames": ["preflight"]}]),),
            also_in_bundle=((RUNTIME_REF, _init_container_missing(p)),),
        ),
    ]


def _flux_runtime(num_proc_per_node: int = 1, init_containers: list[str] | None = None) -> dict[str, Any]:
    return runtime(
        "flux-runtime",
        [job("node", ancestor="trainer", init_containers=init_containers)],
        ml_policy={"numNodes": 1, "flux": {"numProcPerNode": num_proc_per_node}},
    )


def _flux_cases(p: Profile) -> list[Case]:
    settings = RELEASES[p.name]
    npn = Expected(NPN, "Invalid", "must be greater than or equal to 1 for Flux TrainJob")
    installer = Expected("spec.trainer.initContainers", "Invalid", "InitContainer 'flux-installer' is reserved")
    return [
        Case(
            "flux_allowed",
            "A Flux TrainJob with one process per node and its own initContainer.",
            trainjob(p, runtime="flux-runtime", trainer={"numNodes": 2, "numProcPerNode": 1}),
            cluster=(_flux_runtime(init_containers=["setup"]),),
        ),
        Case(
            "flux_num_proc_per_node_zero",
            "v2.3: spec.trainer.numProcPerNode 0 on a Flux runtime (flux.go Validate reads the TrainJob's value "
            "first); v2.2 reads only the runtime's, which its CRD keeps >= 1.",
            trainjob(p, runtime="flux-runtime", trainer={"numProcPerNode": 0}),
            cluster=(_flux_runtime(),),
            expected=(npn,) if settings.flux_trainer_num_proc_per_node else (),
        ),
        Case(
            "flux_installer_reserved",
            "v2.2+: the runtime's node job has an initContainer flux-installer, which the Flux plugin adds itself.",
            trainjob(p, runtime="flux-runtime"),
            cluster=(_flux_runtime(init_containers=["flux-installer"]),),
            expected=(installer,) if settings.flux_checks else (),
        ),
        Case(
            "flux_installer_from_runtime_patch",
            "v2.2+: a runtime patch that adds flux-installer to the node job counts: upstream checks the merged "
            "template.",
            trainjob(
                p,
                runtime="flux-runtime",
                overrides=[override_entry(p, ["node"], init_containers=[{"name": "flux-installer"}])],
            ),
            cluster=(_flux_runtime(),),
            expected=(installer,) if settings.flux_checks else (),
            also_in_bundle=((RUNTIME_REF, _init_container_missing(p)),),
        ),
    ]


VOLCANO_QUEUE = "scheduling.volcano.sh/queue-name"


def _volcano_runtime(annotations: dict[str, str] | None) -> dict[str, Any]:
    rt = runtime()
    rt["spec"]["podGroupPolicy"] = {"volcano": {}}
    if annotations is not None:
        rt["spec"]["template"]["metadata"] = {"annotations": annotations}
    return rt


def _volcano_cases(p: Profile) -> list[Case]:
    settings = RELEASES[p.name]
    empty = Expected(f"spec.annotations[{VOLCANO_QUEUE}]", "Invalid", "Volcano queue name must not be empty")

    def patched(queue: str) -> list[dict[str, Any]]:
        entry = override_entry(p, ["node"])
        entry["trainingRuntimeSpec"]["template"]["metadata"] = {"annotations": {VOLCANO_QUEUE: queue}}
        return [entry]

    cases = [
        Case(
            "volcano_queue_set",
            "A Volcano runtime naming a queue.",
            trainjob(p),
            cluster=(_volcano_runtime({VOLCANO_QUEUE: "q1"}),),
        ),
        Case(
            "volcano_queue_empty",
            "v2.1+: the runtime template's queue annotation is empty (volcano.go Validate).",
            trainjob(p),
            cluster=(_volcano_runtime({VOLCANO_QUEUE: ""}),),
            expected=(empty,) if settings.volcano_queue_annotations != "none" else (),
        ),
        Case(
            "volcano_queue_empty_without_volcano_policy",
            "Without podGroupPolicy.volcano the annotation is not checked.",
            trainjob(p),
            cluster=(runtime(),),
        ),
    ]
    if settings.volcano_queue_annotations == "trainjob":
        cases += [
            Case(
                "volcano_queue_emptied_by_trainjob",
                "v2.1: the TrainJob's spec.annotations override the runtime's.",
                trainjob(p, extra={"annotations": {VOLCANO_QUEUE: ""}}),
                cluster=(_volcano_runtime({VOLCANO_QUEUE: "q1"}),),
                expected=(empty,),
            ),
            Case(
                "volcano_queue_set_by_trainjob",
                "v2.1: a TrainJob that names a queue over the runtime's empty one.",
                trainjob(p, extra={"annotations": {VOLCANO_QUEUE: "q1"}}),
                cluster=(_volcano_runtime({VOLCANO_QUEUE: ""}),),
            ),
        ]
    if settings.volcano_queue_annotations == "patches":
        cases += [
            Case(
                "volcano_queue_emptied_by_runtime_patch",
                "v2.2+: a runtime patch's template metadata annotations override the runtime's.",
                trainjob(p, overrides=patched("")),
                cluster=(_volcano_runtime({VOLCANO_QUEUE: "q1"}),),
                expected=(empty,),
            ),
            Case(
                "volcano_queue_set_by_runtime_patch",
                "v2.2+: the last patch that sets the annotation wins.",
                trainjob(p, overrides=[*patched(""), {**patched("q2")[0], "manager": "example.com/other"}]),
                cluster=(_volcano_runtime(None),),
            ),
        ]
    return cases


def cases(p: Profile) -> list[Case]:
    return (
        _torch_cases(p)
        + _mpi_cases(p)
        + _torchtune_cases(p)
        + _xgboost_cases(p)
        + _mpi_reserved_env_cases(p)
        + _env_injection_cases(p)
        + _flux_cases(p)
        + _volcano_cases(p)
    )
