"""Spring Boot's start, after each package (jvm/build runs every jvm/*/train.py with the lab's
Python). Its start on one CPU (7-10 s) is mostly loading and linking classes, so each profile is
started once to write a class-data sharing archive of the classes its start loads, the archive
its command maps (-XX:SharedArchiveFile): Spring Boot's own advice for its start. Each training
run is the profile's own command from target.toml, the archive written instead of read
(-XX:ArchiveClassesAtExit) and the context closed once refreshed (spring.context.exit, Spring
6.1+). Classes only: no method profiles or compiled code reach the JIT (JDK 25's AOT cache
would hand it the training run's profiles, and change the warm-up the runner measures). The
JVM ignores an archive that does not match its jar or JDK."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from lab.proc.server import fill  # noqa: E402
from lab.targets import load  # noqa: E402

SHARED = "-XX:SharedArchiveFile="
TIMEOUT_S = 120  # a start on a busy machine takes 5-30 s


def main() -> int:
    target = load(Path(__file__).with_name("target.toml"))
    for name, profile in target.profiles.items():
        command = [fill(part, target) for part in profile.command]
        archive = Path(next(p for p in command if p.startswith(SHARED)).removeprefix(SHARED))
        dump = [
            f"-XX:ArchiveClassesAtExit={archive}" if p.startswith(SHARED) else p for p in command
        ]
        dump.insert(dump.index("-jar"), "-Dspring.context.exit=onRefresh")
        log = archive.with_suffix(".train.log")
        archive.unlink(missing_ok=True)
        env = {**os.environ, "PORT": "0", "HOST": "127.0.0.1", "DATABASE_URL": ""}
        with log.open("w") as out:
            try:
                done = subprocess.run(dump, stdout=out, stderr=out, env=env, timeout=TIMEOUT_S)
            except subprocess.TimeoutExpired:
                done = None
        if done is None or done.returncode != 0 or not archive.is_file():
            print(
                f"spring: the {name} training run wrote no archive (its output: {log})",
                file=sys.stderr,
            )
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
