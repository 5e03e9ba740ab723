# Concurrency lab: equivalent servers under one contract, loaded by shared k6 scripts.
# `just` lists the recipes; `just setup` installs everything on a fresh machine.

set shell := ["bash", "-euo", "pipefail", "-c"]
set positional-arguments

export UV_PYTHON_DOWNLOADS := "never"
export K6_NO_USAGE_REPORT := "true"
# Python caches its bytecode (__pycache__, git-ignored) even where the shell says not to: without
# it every Python server start and every pytest run compiles all it imports from source again
# (measured: a Python app's imports 1.4 -> 0.7 s, collecting the whole test suite 16 -> 6 s).
export PYTHONDONTWRITEBYTECODE := ""
export PATH := justfile_directory() / ".tools/uv/bin" + ":" + justfile_directory() / ".tools/py/bin" + ":" + justfile_directory() / ".tools/bin" + ":" + env("PATH")

python := justfile_directory() / ".venv/bin/python"
k6_version := "v1.8.1"
# Node for the node/ targets, from the npm registry's binary package (node-linux-<arch>):
# the same Node on every machine, whatever the machine's own (only its npm is used).
node_version := "24.21.0"
# Pinned: a newer uv may rewrite unrelated lines of uv.lock when a dependency is added.
uv_version := "0.13.9"

_default:
    @just --list --unsorted

# Install everything the lab needs (idempotent): uv (pinned), the Python env from uv.lock, Node, the JDK link and Maven's repository, the builds, k6.
[group('setup')]
setup:
    #!/usr/bin/env bash
    set -euo pipefail
    # uv gets a folder of its own: .ci/run puts `just` in .tools/py, and pip --target will not
    # add to an existing bin/ there.
    if ! .tools/uv/bin/uv --version 2>/dev/null | grep -q "uv {{uv_version}}"; then
        echo "installing uv {{uv_version}} into .tools/uv"
        rm -rf .tools/uv
        python3 -m pip install --quiet --disable-pip-version-check --target .tools/uv "uv=={{uv_version}}"
    fi
    uv sync --frozen --quiet
    # One more environment per interpreter found (.venvs/3.12, ...), from the same uv.lock;
    # names the versions it did not find. Missing ones are no failure.
    {{python}} -m lab.interpreters setup
    if ! .tools/node/bin/node --version 2>/dev/null | grep -qx "v{{node_version}}"; then
        command -v npm >/dev/null || { echo "npm is missing: install npm (Debian's 'npm' package); setup installs Node {{node_version}} with it" >&2; exit 2; }
        case "$(uname -m)" in x86_64) arch=x64 ;; aarch64) arch=arm64 ;; *) arch="$(uname -m)" ;; esac
        echo "installing node {{node_version}} into .tools/node (npm's node-linux-$arch)"
        rm -rf .tools/node
        npm install --silent --prefix .tools/node --no-save --no-package-lock "node-linux-$arch@{{node_version}}"
        mkdir -p .tools/node/bin
        ln -sf "../node_modules/node-linux-$arch/bin/node" .tools/node/bin/node
    fi
    # The Node targets' packages, exactly as node/package-lock.json has them (npm ci, run by
    # the pinned Node); again only when the lock changed.
    if ! cmp -s node/package-lock.json node/node_modules/.lab-lock; then
        (cd node && PATH="$PWD/../.tools/node/bin:$PATH" npm ci --silent --no-audit --no-fund)
        cp node/package-lock.json node/node_modules/.lab-lock
    fi
    # The JVM targets: a JDK >= 22 (virtual threads; the FFM API, final in 22, makes the kit's
    # native sleep), JAVA_HOME's if it is one, else the newest in /usr/lib/jvm, linked as
    # .tools/jdk for the manifests; Maven fills .tools/m2 once (jvm/mvn setup), then runs offline.
    jdk="" best=0
    for home in /usr/lib/jvm/*/ "${JAVA_HOME:-}"; do
        home="${home%/}"
        v="$(sed -n 's/^JAVA_VERSION="\([0-9]*\).*/\1/p' "$home/release" 2>/dev/null || true)"
        [ -n "$home" ] && [ -x "$home/bin/javac" ] && [ "${v:-0}" -ge 22 ] || continue
        if [ "$home" = "${JAVA_HOME:-}" ] || [ "$v" -gt "$best" ]; then jdk="$home" best="$v"; fi
    done
    [ -n "$jdk" ] || { echo "a JDK >= 22 is missing (virtual threads and the FFM API): install Debian's temurin-25-jdk or openjdk-25-jdk, or set JAVA_HOME to one" >&2; exit 2; }
    command -v mvn >/dev/null || { echo "Maven is missing: install Debian's 'maven' package (the JVM targets' build)" >&2; exit 2; }
    ln -sfn "$jdk" .tools/jdk
    jvm/mvn setup
    {{python}} -m lab build
    if ! .tools/bin/k6 version 2>/dev/null | grep -q "k6 {{k6_version}} "; then
        echo "installing k6 {{k6_version}} into .tools/bin (about 1.5 min)"
        GOBIN="$PWD/.tools/bin" go install "go.k6.io/k6@{{k6_version}}"
    fi
    # Headless Chromium, for the report's browser test (Debian's package).
    if ! command -v chromium >/dev/null; then
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
            echo "installing chromium (apt-get)"
            apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
        else
            echo "chromium is missing: install Debian's 'chromium' package for the report test" >&2
        fi
    fi
    echo "setup done: $({{python}} --version), $(go version | cut -d' ' -f3), $(.tools/bin/k6 version | cut -d' ' -f1-2), node $(.tools/node/bin/node --version), java $(.tools/jdk/bin/java -XshowSettings:properties -version 2>&1 | sed -n 's/ *java.runtime.version = //p') ($jdk), $(chromium --version 2>/dev/null || echo 'no chromium')"

# Fail early, with the fix, when setup has not run.
_ready:
    @test -x {{python}} -a -x .tools/bin/k6 -a -x .tools/node/bin/node -a -x .tools/jdk/bin/java || { echo "lab is not set up: run 'just setup'" >&2; exit 2; }

# List targets, their server profiles and the contract's endpoints.
[no-exit-message]
[group('lab')]
targets: _ready
    @{{python}} -m lab targets

# On 127.0.0.1:$PORT (default 8000), with the upstream on 8001 and an embedded PostgreSQL on a
# free port (its URL printed); PYTHON=3.13 serves a Python target on that interpreter.
# Run one target, the upstream and a database in the foreground: `just serve go [PROFILE] [--db-url URL]`.
[no-exit-message]
[group('lab')]
serve target *options: _ready
    @{{python}} -m lab serve "$@"

# List the Python interpreters set up (`just setup` makes an environment for each one found).
[group('lab')]
pythons: _ready
    @{{python}} -m lab.interpreters

# Create python/NAME/, node/NAME/ or jvm/NAME/ from an existing kit target, e.g. `just new-target mine --like starlette` (or `--like express`, `--like jdkhttp`).
[no-exit-message]
[group('lab')]
new-target name *options: _ready
    @{{python}} -m lab new-target "$@"

# Benchmark one target x one endpoint, e.g. `just bench go sync --vus 100 --duration 10s`.
[no-exit-message]
[group('bench')]
bench target endpoint *options: _ready
    @{{python}} -m lab bench "$@"

# Benchmark the whole matrix (default `quick`; `--matrix full` for every profile and a VU sweep).
[no-exit-message]
[group('bench')]
bench-all *options: _ready
    @{{python}} -m lab bench-all "$@"

# One cell's load for Kubernetes: the k6-operator TestRun, its volume and the k6 archive, e.g. `just k6-operator go hello --url http://go.default.svc:8000 --parallelism 4`.
[no-exit-message]
[group('bench')]
k6-operator target endpoint *options: _ready
    @{{python}} -m lab k6-operator "$@"

# Make the collected outputs of k6 instances that ran one cell in segments (the k6-operator's runners) a run with one merged row.
[no-exit-message]
[group('bench')]
ingest dir *options: _ready
    @{{python}} -m lab ingest "$@"

# Rewrite README's targets table from the manifests (`--check`: only compare).
[no-exit-message]
[group('lab')]
docs *options: _ready
    @{{python}} -m lab docs "$@"

# Compare two runs cell by cell: change in rps and p95, and whether it beats the noise.
[no-exit-message]
[group('bench')]
compare run_a run_b: _ready
    @{{python}} -m lab compare "$@"

# Write report.html (self-contained), charts/*.png and summary.md into a run (default: latest).
[no-exit-message]
[group('bench')]
report *run: _ready
    @{{python}} -m lab report "$@"

# The whole test suite: lint, Go tests, and every kind of test (unit, conformance, e2e).
[group('test')]
test: setup lint
    cd go && go test ./...
    cd node && ../.tools/node/bin/node --test
    jvm/mvn -q test
    {{python}} -m pytest

# Unit tests only: no server, no k6 (seconds). Extra arguments go to pytest.
[group('test')]
test-unit *args: _ready
    {{python}} -m pytest --kind unit "$@"

# The conformance suite: every target x profile against the contract (`-k NAME` for one).
[group('test')]
test-conformance *args: _ready
    {{python}} -m pytest --kind conformance "$@"

# End-to-end: the runner, k6 and real servers, faults included.
[group('test')]
test-e2e *args: _ready
    {{python}} -m pytest --kind e2e "$@"

# The conformance tests of one target, e.g. `just test-target starlette` (failures name its log).
[group('test')]
test-target name: _ready
    {{python}} -m pytest --kind conformance -k "{{name}}"

# Linters and formatters in check mode (ruff, gofmt, go vet, prettier, google-java-format).
[group('test')]
lint: _ready
    {{python}} -m ruff check .
    {{python}} -m ruff format --check .
    cd go && test -z "$(gofmt -l .)" || { gofmt -l .; echo "gofmt: files above need formatting" >&2; exit 1; }
    cd go && go vet ./...
    cd node && ../.tools/node/bin/node node_modules/prettier/bin/prettier.cjs --config .prettierrc.json --check --log-level warn . ../tests/conformance/bites/node
    cd node && ../.tools/node/bin/node node_modules/prettier/bin/prettier.cjs --config ../k6/.prettierrc.json --check --log-level warn ../k6/lab.js
    jvm/mvn -q spotless:check

# Format Python, Go, JavaScript and Java code in place.
[group('test')]
fmt: _ready
    {{python}} -m ruff format .
    {{python}} -m ruff check --fix .
    cd go && gofmt -w .
    cd node && ../.tools/node/bin/node node_modules/prettier/bin/prettier.cjs --config .prettierrc.json --write --log-level warn . ../tests/conformance/bites/node
    cd node && ../.tools/node/bin/node node_modules/prettier/bin/prettier.cjs --config ../k6/.prettierrc.json --write --log-level warn ../k6/lab.js
    jvm/mvn -q spotless:apply

# Re-run a published post's experiment: published / measured / predicted per figure (no name: list).
[no-exit-message]
[group('bench')]
reproduce *post: _ready
    @{{python}} -m lab reproduce "$@"
