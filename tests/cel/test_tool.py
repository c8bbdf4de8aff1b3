"""tools/cel, Kubernetes' own admission-policy code built from the Go module proxy on each supported CEL library: its
version, a
ValidatingAdmissionPolicy judged by the API server's dispatcher (the status a client receives, the cost spent),
the compatibility check that decides which Kubernetes versions accept an expression, and bad input."""

from __future__ import annotations

import subprocess
from dataclasses import replace
from typing import Any

import pytest

from kubeflow_trainer_policy.cel import run, toolchain
from kubeflow_trainer_policy.cel.toolchain import CelUnavailable, cel_binary
from tests.cel.helpers import LIBRARIES

TRAINJOBS = {"group": "trainer.kubeflow.org", "version": "v1alpha1", "resource": "trainjobs"}


def _policy(expression: str) -> dict[str, Any]:
    rules = [{"apiGroups": ["trainer.kubeflow.org"], "apiVersions": ["*"], "operations": ["CREATE"]}]
    rules[0]["resources"] = ["trainjobs"]
    return {
        "name": "p",
        "flavour": "vap",
        "policy": {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": "short-names"},
            "spec": {
                "matchConstraints": {"resourceRules": rules},
                "validations": [
                    {"expression": expression, "messageExpression": "'name too long: ' + object.metadata.name"}
                ],
            },
        },
        "bindings": [
            {
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "ValidatingAdmissionPolicyBinding",
                "metadata": {"name": "short-names-binding"},
                "spec": {"policyName": "short-names", "validationActions": ["Deny"]},
            }
        ],
    }


def _request(name: str) -> dict[str, Any]:
    return {
        "uid": "1",
        "kind": {"group": "trainer.kubeflow.org", "version": "v1alpha1", "kind": "TrainJob"},
        "resource": TRAINJOBS,
        "namespace": "team-a",
        "name": name,
        "operation": "CREATE",
        "userInfo": {},
        "object": {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": {"name": name}},
    }


@pytest.mark.parametrize("library", LIBRARIES)
def test_each_build_links_the_apiserver_and_cel_go_its_gatekeeper_vendors(library):
    """`cel version` reads the module versions from the binary's own build information, so this fails when a build
    links another k8s.io/apiserver or cel-go than the library names (tools/cel/libraries.json, copied from that
    Gatekeeper's go.mod)."""
    lib = toolchain.library(library)
    out = subprocess.run([str(cel_binary(library)), "version"], capture_output=True, text=True, check=True).stdout
    lines = out.splitlines()
    assert lines[0] == f"Kubernetes admission-policy code: k8s.io/apiserver {lib.apiserver}"
    assert lines[1] == f"CEL: github.com/google/cel-go {lib.cel_go}"
    assert lines[2] == f"Library: {library}"
    # Gatekeeper's driver and the API server compile in the environment of the library's own default version
    minor = int(lib.apiserver.split(".")[1])
    assert lines[3] == f"Default compatibility version: 1.{minor - 1}"


def test_a_module_the_proxy_cannot_serve_fails_with_one_line_naming_it(tmp_path):
    """A library pinned to a k8s.io/apiserver the proxy has never had: the build stops before compiling, with one
    line naming the library, the module and the version."""
    folder = tmp_path / "modules" / "bogus"
    folder.mkdir(parents=True)
    go_mod = "module kubeflow-trainer-policy/tools/cel\n\ngo 1.24.0\n\nrequire k8s.io/apiserver v0.33.999\n"
    (folder / "go.mod").write_text(go_mod)
    (folder / "go.sum").write_text("")
    lib = replace(toolchain.library(), name="bogus", modules=tmp_path / "modules")
    with pytest.raises(CelUnavailable) as raised:
        toolchain.ensure_built(lib, cache=tmp_path / "cache")
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith("bogus: the Go module proxy cannot serve k8s.io/apiserver@v0.33.999: ")
    assert not list((tmp_path / "cache" / "bin").glob("cel-bogus-*"))


def test_a_policy_denies_with_the_api_servers_status_and_its_cost():
    cases = [{"id": n, "policy": "p", "request": _request(n)} for n in ("ok", "much-too-long")]
    allowed, denied = run.evaluate([_policy("size(object.metadata.name) < 5")], cases)
    assert allowed["admission"] == {"allowed": True, "warnings": []} and allowed["cost"] > 0
    assert denied["admission"]["code"] == 422
    assert denied["admission"]["message"] == (
        "trainjobs.trainer.kubeflow.org \"much-too-long\" is forbidden: ValidatingAdmissionPolicy 'short-names' "
        "with binding 'short-names-binding' denied request: name too long: much-too-long"
    )


def test_check_knows_which_kubernetes_versions_have_a_library():
    """Two-variable comprehensions came with Kubernetes 1.32's CEL libraries: an API server (which offers N-1's)
    accepts them from 1.33."""
    policy = _policy("object.metadata.name.split('').transformList(i, c, i < 63, c).size() < 63")
    assert run.check([policy], "1.32") == []
    [error] = run.check([policy], "1.31")
    assert error["field"] == "validations[0].expression" and "undeclared reference to 'transformList'" in error["error"]


def _template(variable: str, validation: str) -> dict[str, Any]:
    source = {
        "variables": [{"name": "limit", "expression": variable}],
        "validations": [{"expression": validation, "message": "too long"}],
    }
    code = [{"engine": "Rego", "source": {"rego": "package x"}}, {"engine": "K8sNativeValidation", "source": source}]
    return {
        "name": "t",
        "flavour": "gatekeeper",
        "template": {
            "apiVersion": "templates.gatekeeper.sh/v1",
            "kind": "ConstraintTemplate",
            "metadata": {"name": "t"},
            "spec": {"targets": [{"target": "admission.k8s.gatekeeper.sh", "code": code}]},
        },
    }


def test_gatekeeper_environment_declares_what_gatekeepers_driver_declares():
    """Gatekeeper's driver gives `params` (the whole Constraint) to variables only; its validations read
    variables.params. The API server's policy environment declares params for every expression, Gatekeeper's not."""
    through_variable = _template("params.spec.parameters.max", "size(object.metadata.name) <= variables.limit")
    assert run.check([through_variable], "1.30", "gatekeeper") == []
    direct = _template("63", "size(object.metadata.name) <= params.spec.parameters.max")
    assert run.check([direct], "1.30") == []
    [error] = run.check([direct], "1.30", "gatekeeper")
    assert error["field"] == "validations[0].expression" and "undeclared reference to 'params'" in error["error"]


def test_gatekeeper_environment_has_only_its_librarys_functions():
    """A Gatekeeper that vendors k8s.io/apiserver 0.31 has no two-variable comprehensions (1.32's libraries)."""
    newer = _template("63", "object.metadata.name.split('').transformList(i, c, c).size() <= variables.limit")
    assert run.check([newer], "1.32", "gatekeeper") == []
    [error] = run.check([newer], "1.31", "gatekeeper")
    assert "undeclared reference to 'transformList'" in error["error"]


def test_bad_input_exits_2_with_one_line():
    result = subprocess.run([str(cel_binary()), "eval"], input="{", capture_output=True, text=True, check=False)
    assert result.returncode == 2
    assert result.stderr.strip() == "cel: stdin is not the input document: unexpected EOF"
    unknown = run.evaluate([], [{"id": "x", "policy": "missing", "request": _request("a")}])
    assert unknown == [{"id": "x", "decisions": None, "cost": 0, "error": 'policy: no policy named "missing"'}]


def test_a_session_compiles_each_policy_once_and_replaces_one_that_changed():
    cases = [{"id": n, "policy": "p", "request": _request(n)} for n in ("ok", "much-too-long")]
    short, long_names = _policy("size(object.metadata.name) < 5"), _policy("size(object.metadata.name) < 50")
    with run.CelSession() as session:
        assert [r["admission"]["allowed"] for r in run.evaluate([short], cases, session)] == [True, False]
        assert session._new_policies([short]) == []  # compiled: not sent again
        assert [r["admission"]["allowed"] for r in run.evaluate([short], cases, session)] == [True, False]
        # the same name with other content replaces the compiled policy
        assert [r["admission"]["allowed"] for r in run.evaluate([long_names], cases, session)] == [True, True]
        # and the cases of a batch without policies are judged by what is compiled
        assert [r["admission"]["allowed"] for r in run.evaluate([], cases, session)] == [True, True]
        assert [r["admission"]["allowed"] for r in run.evaluate([short], cases, session)] == [True, False]
