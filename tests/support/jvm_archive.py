"""Write a class-data-sharing archive of the classes a test JVM loads: ``python tests/support/jvm_archive.py PATH``.

Every JVM the suite starts (the test workers' sessions, report and tutorial kernels, CLI subprocesses)
loads ~20,000 of Spark's classes from its jars again; mapped from one archive, a local session starts in
about half the CPU (measured: 9.4 s -> 5.5 s per start). ``make test`` builds the archive once per
virtualenv: this script runs every registered system's bundled example in one session with the suite's
settings, under ``-XX:ArchiveClassesAtExit``, and moves the archive into place only when the JVM has
written it whole. JVMs whose class path differs (the launcher, cluster executors, Connect servers) and
JVMs after a pyspark or JDK upgrade just ignore it; so does everything when it is missing.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _workload() -> int:
    """Run every registered system's bundled example once (a failure is reported, not fatal)."""
    sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
    os.chdir(ROOT)
    from support.session_config import test_session_config

    from dqkit.runtime.session import get_spark
    from dqkit.systems import all_systems

    spark = get_spark(master="local[2]", config=test_session_config())
    for system in all_systems():
        try:
            system.run(system.prepare(system.example), spark=spark)
        except Exception as exc:  # the archive only misses some classes
            print(f"jvm_archive: {system.name}'s example failed ({type(exc).__name__}); archive kept",
                  file=sys.stderr)
    gateway = spark.sparkContext._gateway
    proc = getattr(gateway, "proc", None)
    spark.stop()
    if proc is not None:  # the JVM writes the archive as it exits: wait for it
        proc.stdin.close()
        proc.wait(timeout=600)
    return 0


def main(path: str) -> int:
    """Build ``path`` in a child process with the dump option; 0 when the archive is in place."""
    target = Path(path)
    partial = target.with_name(target.name + ".partial")
    partial.unlink(missing_ok=True)
    env = dict(os.environ)
    env["JDK_JAVA_OPTIONS"] = " ".join(
        [env.get("JDK_JAVA_OPTIONS", ""), f"-XX:ArchiveClassesAtExit={partial}", "-Xlog:cds*=off"]).strip()
    done = subprocess.run([sys.executable, __file__, "--workload"], env=env, stdout=subprocess.DEVNULL)
    # The launcher JVM dumps its few classes first; the session's JVM replaces them with ~100 MB.
    if done.returncode != 0 or not partial.exists() or partial.stat().st_size < 50_000_000:
        partial.unlink(missing_ok=True)
        print(f"jvm_archive: no archive written (exit {done.returncode}); the tests run without one",
              file=sys.stderr)
        return 0
    os.replace(partial, target)
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--workload"]:
        sys.exit(_workload())
    if len(sys.argv) != 2:
        sys.exit(__doc__.splitlines()[0])
    sys.exit(main(sys.argv[1]))
