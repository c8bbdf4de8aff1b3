"""`provider serve --objects` and `review --objects`: JSON read as JSON, YAML with libyaml, answers only kept."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from kubeflow_trainer_policy_provider import reader
from kubeflow_trainer_policy_provider.reader import read_documents
from kubeflow_trainer_policy_provider.sources import StaticJobSetSource


def jobset(name: str, active: int, **annotations: str) -> dict[str, object]:
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": name, "namespace": "team-a", "annotations": annotations},
        "spec": {"replicatedJobs": [{"name": "node", "replicas": 4}]},
        "status": {"replicatedJobsStatus": [{"name": "node", "active": active}]},
    }


def test_a_json_file_is_parsed_as_json(tmp_path: Path) -> None:
    # JSON's 1e3 is the number 1000; YAML 1.1 (PyYAML, libyaml) reads it as the string "1e3"
    text = json.dumps({"apiVersion": "v1", "kind": "List", "items": [jobset("a", 1)]}).replace(
        '"replicas": 4', '"replicas": 1e3'
    )
    assert yaml.safe_load(text)["items"][0]["spec"]["replicatedJobs"][0]["replicas"] == "1e3"
    path = tmp_path / "jobsets.json"
    path.write_text(text)
    [doc] = read_documents(path)
    assert doc.body["spec"]["replicatedJobs"][0]["replicas"] == 1000.0 and doc.source == f"{path} items[0]"


def test_yaml_is_read_with_libyaml_when_present(tmp_path: Path) -> None:
    assert reader._SCANNER is getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    path = tmp_path / "jobsets.yaml"
    path.write_text(yaml.safe_dump_all([jobset("a", 1), jobset("b", 0)]))
    assert [d.body["metadata"]["name"] for d in read_documents(path)] == ["a", "b"]


def test_the_static_source_keeps_answers_not_objects() -> None:
    source = StaticJobSetSource(jobset(f"j{i}", i % 2) for i in range(1000))
    busy, idle = source.lookup("team-a", "j1"), source.lookup("team-a", "j2")
    assert busy.answer() == {"found": True, "activeReplicatedJobs": ["node"]}
    assert idle.answer() == {"found": True, "activeReplicatedJobs": []}
    assert busy.jobset is None and idle.jobset is None  # the objects are gone
    assert source.lookup("team-a", "j3") is busy  # equal answers are one shared object
    assert not source.lookup("team-a", "absent").found


def test_json_numbers_are_read_as_kubernetes_decodes_them(tmp_path: Path) -> None:
    # apimachinery: an integer that fits int64 stays an integer, any other number is a float64 (and OPA then
    # prints an integral float below 1e6 as an integer); each literal kind goes through its own hook.
    path = tmp_path / "numbers.json"
    path.write_text(
        '{"kind": "Numbers", "min": -9223372036854775808, "max": 9223372036854775807, "over": 9223372036854775808,'
        ' "big": 12345678901234567890, "two": 2.0, "half": 0.5, "exp": 1e3, "million": 1e6}'
    )
    [doc] = read_documents(path)
    body = doc.body
    assert body["min"] == -(2**63) and isinstance(body["min"], int)
    assert body["max"] == 2**63 - 1 and isinstance(body["max"], int)
    assert body["over"] == 9.223372036854776e18 and isinstance(body["over"], float)
    assert body["big"] == 1.2345678901234567e19 and isinstance(body["big"], float)
    assert body["two"] == 2 and isinstance(body["two"], int)
    assert body["half"] == 0.5 and body["exp"] == 1000 and isinstance(body["exp"], int)
    assert body["million"] == 1e6 and isinstance(body["million"], float)


def test_json_without_long_integers_reads_the_same_numbers(tmp_path: Path) -> None:
    # Without a run of 19 digits no integer can leave int64, so json's own integer path is used: the values and
    # their types are those of the hooked path. An 18-digit integer and a 19-digit uid in a string are both cases.
    text = '{"kind": "Numbers", "a": 999999999999999999, "b": -7, "two": 2.0, "uid": "%s", "n": [1, 2.5]}'
    short, long = tmp_path / "short.json", tmp_path / "long.json"
    short.write_text(text % "123456789012345678")
    long.write_text(text % "1234567890123456789")
    [fast], [hooked] = read_documents(short), read_documents(long)
    assert fast.body == {**hooked.body, "uid": "123456789012345678"}
    assert fast.body["a"] == 999999999999999999 and isinstance(fast.body["a"], int)
    assert fast.body["two"] == 2 and isinstance(fast.body["two"], int) and fast.body["n"] == [1, 2.5]
