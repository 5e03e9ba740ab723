"""`lab k6-operator`: one cell's load for Kubernetes, run by the k6-operator (grafana/
k6-operator, its TestRun CRD k6.io/v1alpha1 as of v1.6.0): a folder with the `k6 archive` of
k6/lab.js holding the cell's values, the TestRun that runs it on N runners, the volume the
runners write their outputs to, and a pod to collect them from. Nothing here talks to a
cluster (kubectl is the user's); `lab ingest` turns the collected outputs into a run.

The operator gives runner i (1..N) its own --execution-segment and the sequence; every
runner gets the same arguments, so the outputs' paths cannot differ by runner: each runner
mounts its own sub-folder of one volume instead (subPathExpr from its pod's name)."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from lab import ROOT, arguments
from lab.contract import load
from lab.errors import UsageError
from lab.matrix import Cell, Matrix, MatrixError, spec_cell
from lab.run import loadgen, segments
from lab.rundir import RESULTS_DIR
from lab.targets import discover

OPERATOR_VERSION = "v1.6.0"  # the TestRun CRD the manifest is written for
K6_IMAGE = "grafana/k6:1.8.1"  # the k6 of `just setup`, for the runners too
K6_UID = 12345  # the user grafana/k6's image runs as: the volume must be writable by it
OUT = "/out"  # where each runner's own folder of the outputs volume is mounted
SUMMARY = f"{OUT}/summary.json"
SAMPLES = f"{OUT}/samples{segments.SAMPLES_SUFFIX}"
ARCHIVE = "lab.tar"
CELL_JSON = "cell.json"  # the cell, for `lab ingest` (target and profile)
# A Kubernetes name: the operator names its jobs NAME-i and its services NAME-service-i.
NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?$")


def _check_url(url: str) -> str:
    """The cluster's address of the server: scheme://host[:port], as k6/lab.js takes it. It
    is not reached from here (it is the cluster's)."""
    parts = urlsplit(url)
    if (
        parts.scheme not in ("http", "https")
        or not parts.hostname
        or parts.path.strip("/")
        or parts.query
    ):
        raise UsageError(f"--url must look like http://go.default.svc:8000, got {url!r}")
    return url.rstrip("/")


def cell_of(args: argparse.Namespace) -> Cell:
    """The one cell of the command line (bench's options, one value each)."""
    contract = load()
    params = {k: getattr(args, k) for k in ("ms", "n") if getattr(args, k) is not None}
    bench = [e.name for e in contract.bench_endpoints()]
    if args.endpoint in bench:
        for name in params:
            if contract[args.endpoint].param(name) is None:
                raise UsageError(f"--{name} does not apply to /{args.endpoint}")
    spec = {"target": args.target, "endpoint": args.endpoint, "params": params}
    if args.profile:
        spec["profile"] = args.profile
    try:
        cell = spec_cell(
            {**spec, "vus": args.vus, "duration": args.duration},
            Matrix("k6-operator"),
            contract,
            discover(),
        )
    except (MatrixError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    return replace(cell, rate=args.rate)


def manifests(name: str, parallelism: int) -> dict[str, dict[str, Any]]:
    """The TestRun, the runners' outputs volume and the pod that collects them (file name ->
    object; JSON, which kubectl applies as it does YAML)."""
    volume = f"{name}-outputs"
    testrun = {
        "apiVersion": "k6.io/v1alpha1",
        "kind": "TestRun",
        "metadata": {"name": name},
        "spec": {
            "parallelism": parallelism,
            "script": {"configMap": {"name": name, "file": ARCHIVE}},
            # exact argv (not `arguments`, which a shell would split)
            "args": segments.output_args(Path(SAMPLES)),
            "runner": {
                "image": K6_IMAGE,
                "env": [
                    {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}
                ],
                "securityContext": {"fsGroup": K6_UID},
                "volumes": [{"name": "outputs", "persistentVolumeClaim": {"claimName": volume}}],
                # each runner its own folder: the same paths, never the same files
                "volumeMounts": [
                    {"name": "outputs", "mountPath": OUT, "subPathExpr": "$(POD_NAME)"}
                ],
            },
        },
    }
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": volume},
        "spec": {
            "accessModes": ["ReadWriteMany"],  # the runners may run on different nodes
            "resources": {"requests": {"storage": "1Gi"}},
        },
    }
    collector = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"{name}-collect"},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "collect",
                    "image": "busybox:1.37",  # has tar, which kubectl cp needs
                    "command": ["sleep", "3600"],
                    "volumeMounts": [{"name": "outputs", "mountPath": OUT}],
                }
            ],
            "volumes": [{"name": "outputs", "persistentVolumeClaim": {"claimName": volume}}],
        },
    }
    return {"testrun.json": testrun, "volume.json": claim, "collect.json": collector}


def archive(cell: Cell, url: str, canary_rate: int, out: Path) -> None:
    """`k6 archive` of k6/lab.js with the cell's values (-e: stored in the archive, which the
    runners' k6 reads them from) and the contract it opens."""
    values = loadgen.script_values(cell, url, SUMMARY, canary_rate)
    command = [loadgen.binary(), "archive", "--quiet", "-O", str(out)]
    for key, value in values.items():
        command += ["-e", f"{key}={value}"]
    done = subprocess.run(
        [*command, str(loadgen.SCRIPT)],
        cwd=ROOT,
        env={**os.environ, "K6_NO_USAGE_REPORT": "true"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines()
        raise UsageError(f"k6 archive failed: {lines[-1] if lines else done.returncode}")


def commands(name: str, folder: Path, parallelism: int) -> str:
    """What the user runs, in order (README's procedure)."""
    collected = folder / "runners"
    stage = "jsonpath='{.status.stage}'=finished"
    return "\n".join(
        [
            f"kubectl create configmap {name} --from-file={folder / ARCHIVE}",
            f"kubectl apply -f {folder / 'volume.json'}",
            f"kubectl apply -f {folder / 'testrun.json'}",
            f"kubectl wait --for={stage} testrun/{name} --timeout=30m",
            f"kubectl apply -f {folder / 'collect.json'}",
            f"kubectl wait --for=condition=Ready pod/{name}-collect",
            f"kubectl cp {name}-collect:{OUT} {collected}",
            f"just ingest {collected}",
            f"kubectl delete testrun/{name} pod/{name}-collect pvc/{name}-outputs configmap/{name}",
            f"# {collected} then holds one folder per runner ({name}-1-... to "
            f"{name}-{parallelism}-...)",
        ]
    )


def cmd_k6_operator(args: argparse.Namespace) -> int:
    """Write one cell's load for the k6-operator: the k6 archive of k6/lab.js with the cell's
    values, the TestRun that runs it on --parallelism runners (each runner writes its summary
    and every request's duration to its own folder of one volume), the volume, and a pod to
    collect the outputs with kubectl cp; `lab ingest` makes them a run. Prints the commands."""
    url = _check_url(args.url)
    cell = cell_of(args)
    name = args.name or re.sub(r"[^a-z0-9-]+", "-", f"lab-{cell.target}-{cell.endpoint}")
    if not NAME.match(name):
        raise UsageError(f"--name {name!r} must be lowercase letters, digits and '-' (<= 40)")
    folder = (args.out or RESULTS_DIR / "k6-operator" / name).resolve()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        archive(cell, url, args.canary_rate, folder / ARCHIVE)
        for file, manifest in manifests(name, args.parallelism).items():
            (folder / file).write_text(json.dumps(manifest, indent=2) + "\n")
        cell_json = {
            "cell": cell.to_json(),
            "url": url,
            "parallelism": args.parallelism,
            "name": name,
            "operator": OPERATOR_VERSION,
        }
        (folder / CELL_JSON).write_text(json.dumps(cell_json, indent=2) + "\n")
    except OSError as exc:
        raise UsageError(f"cannot write {folder}: {exc.strerror or exc}") from None
    print(f"{cell.id} on {args.parallelism} runners against {url}: written to {folder}")
    print(commands(name, folder, args.parallelism))
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = arguments.add_command(
        sub, "k6-operator", cmd_k6_operator, "write a cell's TestRun and k6 archive for Kubernetes"
    )
    p.add_argument("target", help="the target the cluster serves at --url (see 'just targets')")
    p.add_argument("endpoint", help="endpoint name from the contract, e.g. sync, hello")
    p.add_argument("--url", required=True, help="the server's address from the runners' pods")
    p.add_argument(
        "--parallelism", type=arguments.positive, default=2, help="k6 runners (default 2)"
    )
    p.add_argument("--profile", help="the target's server profile (default: its default)")
    p.add_argument("--vus", type=arguments.positive, default=50, help="virtual users, in all")
    p.add_argument("--duration", type=arguments.duration, default="10s", help="e.g. 10s")
    p.add_argument("--rate", type=arguments.positive, help="open model: requests/s, in all")
    p.add_argument("--ms", type=int, help="ms parameter of the endpoint")
    p.add_argument("--n", type=int, help="n parameter of the endpoint")
    p.add_argument(
        "--canary-rate",
        type=arguments.non_negative,
        default=loadgen.CANARY_RATE,
        help="canary /hello requests per second, in all (0: off)",
    )
    p.add_argument("--name", help="the TestRun's name (default lab-TARGET-ENDPOINT)")
    p.add_argument("--out", type=Path, help="folder (default results/k6-operator/NAME)")
