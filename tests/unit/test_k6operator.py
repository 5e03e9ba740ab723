"""lab/run/k6operator.py: the TestRun it writes holds what the k6-operator's CRD requires
(checked field by field against the schema of k6-operator v1.6.0's
config/crd/bases/k6.io_testruns.yaml, the parts encoded below), its runners' segments are
segments.py's, and its mistakes are one line (exit 2) before anything is written. The archive
itself is checked with real k6 in tests/e2e/test_segmented_runs.py."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from lab import cli
from lab.run import k6operator, segments

pytestmark = pytest.mark.unit  # the test's kind: just test-unit

# The TestRun schema of k6-operator v1.6.0 (openAPIV3Schema), the parts the manifest uses:
# "required" lists, each field's type, and the keys an object may have (the API server
# prunes or, with strict validation, rejects unknown ones).
CORE_ENV = {
    "type": "object",
    "required": ["name"],
    "properties": {
        "name": {"type": "string"},
        "value": {"type": "string"},
        "valueFrom": {
            "type": "object",
            "properties": {
                "fieldRef": {
                    "type": "object",
                    "required": ["fieldPath"],
                    "properties": {
                        "apiVersion": {"type": "string"},
                        "fieldPath": {"type": "string"},
                    },
                }
            },
        },
    },
}
VOLUME = {
    "type": "object",
    "required": ["name"],
    "properties": {
        "name": {"type": "string"},
        "persistentVolumeClaim": {
            "type": "object",
            "required": ["claimName"],
            "properties": {"claimName": {"type": "string"}, "readOnly": {"type": "boolean"}},
        },
    },
}
VOLUME_MOUNT = {
    "type": "object",
    "required": ["mountPath", "name"],
    "properties": {
        name: {"type": "boolean" if name == "readOnly" else "string"}
        for name in (
            "mountPath",
            "mountPropagation",
            "name",
            "readOnly",
            "recursiveReadOnly",
            "subPath",
            "subPathExpr",
        )
    },
}
RUNNER_KEYS = (
    "affinity", "automountServiceAccountToken", "containerSecurityContext", "disabled", "env",
    "envFrom", "image", "imagePullPolicy", "imagePullSecrets", "initContainers", "livenessProbe",
    "metadata", "nodeSelector", "priorityClassName", "readinessProbe", "resources",
    "schedulerName", "securityContext", "serviceAccountName", "tolerations",
    "topologySpreadConstraints", "volumeMounts", "volumes",
)  # fmt: skip
SPEC_KEYS = (
    "args", "arguments", "cleanup", "initializer", "parallelism", "paused", "ports", "quiet",
    "runner", "script", "scuttle", "separate", "starter", "testRunId", "token",
)  # fmt: skip
TESTRUN_V1_6_0 = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],  # a Kubernetes object's own
    "properties": {
        "apiVersion": {"type": "string", "enum": ["k6.io/v1alpha1"]},
        "kind": {"type": "string", "enum": ["TestRun"]},
        "metadata": {
            "type": "object",
            "required": ["name"],
            "properties": {"name": {"type": "string"}},
        },
        "spec": {
            "type": "object",
            "required": ["parallelism", "script"],
            "properties": {
                **{k: {"type": "any"} for k in SPEC_KEYS},
                "parallelism": {"type": "integer", "format": "int32"},
                "args": {"type": "array", "items": {"type": "string"}},
                "arguments": {"type": "string"},
                "script": {
                    "type": "object",
                    "properties": {
                        "configMap": {
                            "type": "object",
                            "required": ["name"],
                            "properties": {"name": {"type": "string"}, "file": {"type": "string"}},
                        },
                        "localFile": {"type": "string"},
                        "volumeClaim": {"type": "any"},
                    },
                },
                "runner": {
                    "type": "object",
                    "properties": {
                        **{k: {"type": "any"} for k in RUNNER_KEYS},
                        "image": {"type": "string"},
                        "env": {"type": "array", "items": CORE_ENV},
                        "securityContext": {
                            "type": "object",
                            "properties": {"fsGroup": {"type": "integer", "format": "int64"}},
                        },
                        "volumes": {"type": "array", "items": VOLUME},
                        "volumeMounts": {"type": "array", "items": VOLUME_MOUNT},
                    },
                },
            },
        },
    },
}
PYTHON_TYPES = {"string": str, "integer": int, "boolean": bool, "array": list, "object": dict}


def problems(value: Any, schema: dict[str, Any], at: str = "") -> list[str]:
    """Where `value` breaks `schema` (the subset above: type, enum, required, properties)."""
    kind = schema["type"]
    if kind == "any":
        return []
    if not isinstance(value, PYTHON_TYPES[kind]) or (kind == "integer" and value is True):
        return [f"{at or '.'}: expected {kind}, got {value!r}"]
    if kind == "integer" and schema.get("format") == "int32" and not -(2**31) <= value < 2**31:
        return [f"{at}: {value} is not an int32"]
    if "enum" in schema and value not in schema["enum"]:
        return [f"{at}: {value!r} not one of {schema['enum']}"]
    found = []
    if kind == "array":
        for i, item in enumerate(value):
            found += problems(item, schema["items"], f"{at}[{i}]")
    if kind == "object":
        found += [f"{at}.{k}: required" for k in schema.get("required", []) if k not in value]
        properties = schema.get("properties", {})
        for key, item in value.items():
            if key not in properties:
                found.append(f"{at}.{key}: not a field of the CRD")
            else:
                found += problems(item, properties[key], f"{at}.{key}")
    return found


def test_the_schema_check_catches_mistakes() -> None:
    good = k6operator.manifests("lab-go-hello", 2)["testrun.json"]
    assert problems(good, TESTRUN_V1_6_0) == []
    bad = {**good, "spec": {**good["spec"], "parallelism": "2", "paralelism": 2}}
    del bad["spec"]["script"]["configMap"]["name"]
    assert sorted(problems(bad, TESTRUN_V1_6_0)) == [
        ".spec.paralelism: not a field of the CRD",
        ".spec.parallelism: expected integer, got '2'",
        ".spec.script.configMap.name: required",
    ]


@pytest.mark.parametrize("parallelism", [1, 4])
def test_testrun_fits_the_crd(parallelism: int) -> None:
    files = k6operator.manifests("lab-go-hello", parallelism)
    testrun = files["testrun.json"]
    assert problems(testrun, TESTRUN_V1_6_0) == []
    spec = testrun["spec"]
    assert spec["parallelism"] == parallelism
    assert spec["script"] == {"configMap": {"name": "lab-go-hello", "file": "lab.tar"}}
    # the runners write k6's CSV output, gzipped, with the tags the merge reads
    assert spec["args"] == segments.output_args(Path("/out/samples.csv.gz"))
    assert "--execution-segment" not in spec["args"]  # the operator sets each runner's own
    # each runner mounts its own folder of the one volume, named by its pod
    (mount,) = spec["runner"]["volumeMounts"]
    assert (mount["mountPath"], mount["subPathExpr"]) == ("/out", "$(POD_NAME)")
    (env,) = spec["runner"]["env"]
    assert env["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
    claim = files["volume.json"]
    assert (claim["kind"], claim["metadata"]["name"]) == (
        "PersistentVolumeClaim",
        "lab-go-hello-outputs",
    )
    (volume,) = spec["runner"]["volumes"]
    assert volume["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"]
    collector = files["collect.json"]["spec"]
    assert collector["volumes"] == spec["runner"]["volumes"]


def operator_fragments(index: int, total: int) -> tuple[str, str]:
    """What k6-operator v1.6.0 passes runner `index` (1..total) of `total`
    (pkg/segmentation.NewCommandFragments): unreduced fractions, e.g. 2/4:3/4."""

    def part(i: int) -> str:
        return "0" if i == 0 else "1" if i == total else f"{i}/{total}"

    sequence = ",".join(["0", *(f"{i}/{total}" for i in range(1, total)), "1"])
    return f"{part(index - 1)}:{part(index)}", sequence


@pytest.mark.parametrize("n", [2, 3, 4, 6])
def test_the_operators_segments_are_ours(n: int) -> None:
    """Runner i of the operator runs the share segments.segment(i - 1, n) names: a local
    segmented run and the operator's split the cell alike."""
    for i in range(1, n + 1):
        theirs, their_sequence = operator_fragments(i, n)
        ours = segments.segment(i - 1, n)
        assert [Fraction(x) for x in theirs.split(":")] == [Fraction(x) for x in ours.split(":")]
        assert [Fraction(x) for x in their_sequence.split(",")] == [
            Fraction(x) for x in segments.sequence(n).split(",")
        ]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["go", "hello", "--url", "go.svc:8000"], "--url must look like"),
        (["go", "hello", "--url", "http://go.svc:8000/x"], "--url must look like"),
        (["go", "hello", "--url", "http://go:1", "--ms", "5"], "--ms does not apply to /hello"),
        (["go", "sync", "--url", "http://go:1", "--ms", "99999"], "ms"),
        (["go", "hello", "--url", "http://go:1", "--name", "Bad_Name"], "--name"),
        (["nope", "hello", "--url", "http://go:1"], "nope"),
        (["go", "nope", "--url", "http://go:1"], "nope"),
        (["go", "hello", "--url", "http://go:1", "--parallelism", "0"], "--parallelism"),
        (["go", "hello"], "--url"),
    ],
    ids=[
        "no-scheme",
        "path",
        "ms-on-hello",
        "ms-bounds",
        "name",
        "target",
        "endpoint",
        "zero",
        "url",
    ],
)
def test_mistakes_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], expected: str
) -> None:
    try:
        code = cli.main(["k6-operator", *args, "--out", str(tmp_path / "op")])
    except SystemExit as exc:  # argparse's own mistakes
        code = exc.code
    stderr = capsys.readouterr().err
    assert code == 2, stderr
    assert len(stderr.strip().splitlines()) == 1 and expected in stderr, stderr
    assert not (tmp_path / "op").exists()  # nothing written
