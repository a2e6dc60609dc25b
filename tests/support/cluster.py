"""A real Spark cluster for the test suite, started from the installed pyspark.

``Cluster`` starts a standalone master and two workers (1 core, 1 GiB each) with ``bin/spark-class`` on
free loopback ports, and on demand a Spark Connect server with ``bin/spark-submit``; each process runs
in its own process group, and ``stop()`` ends only those groups. ``ClusterUnavailable`` says why a
process could not start (the fixture turns it into a skip with that reason).
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pyspark

SPARK_HOME = Path(pyspark.__file__).parent
REPO = Path(__file__).resolve().parents[2]
# C1-only JIT and the serial GC: these JVMs live minutes on tiny data (see the Makefile's TEST_JVM)
JVM_OPTS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


class ClusterUnavailable(RuntimeError):
    """A cluster process could not be started; the message says which and why."""


def free_port() -> int:
    """A TCP port nobody listens on right now (loopback)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def accepts(port: int) -> bool:
    """True when something accepts TCP connections on 127.0.0.1:``port``."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def base_env(pythonpath: bool = True) -> dict[str, str]:
    """The environment of every cluster process: loopback, the venv's Python, quiet JVMs, and (when
    ``pythonpath``) this repository on PYTHONPATH so Python workers import this dqkit."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED", "DQKIT_SPARK_MASTER", "PYTHONPATH")}
    env.update(SPARK_HOME=str(SPARK_HOME), SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable,
               PYSPARK_DRIVER_PYTHON=sys.executable, JDK_JAVA_OPTIONS=JVM_OPTS, SPARK_NO_DAEMONIZE="1")
    if pythonpath:
        env["PYTHONPATH"] = str(REPO)
    else:
        # a server whose Python workers cannot import dqkit: run from a folder without it, no site dqkit
        env["PYTHONNOUSERSITE"] = "1"
    return env


class Cluster:
    """A standalone master, two 1-core workers and (``connect()``) Spark Connect servers."""

    def __init__(self, root: str | None = None, worker_memory: str = "1g") -> None:
        self.root = Path(root or tempfile.mkdtemp(prefix="dqkit-cluster-"))
        self.worker_memory = worker_memory
        self.procs: dict[str, subprocess.Popen] = {}
        self.port = self.ui_port = 0
        self.connect_urls: dict[str, str] = {}

    # ------------------------------------------------------------------ processes
    def _spawn(self, name: str, argv: list[str], env: dict[str, str], cwd: Path | None = None) -> subprocess.Popen:
        log = open(self.root / f"{name}.log", "ab")
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=cwd or self.root,
                                start_new_session=True)  # its own process group: stop() ends it whole
        log.close()
        self.procs[name] = proc
        return proc

    def _log_tail(self, name: str, n: int = 15) -> str:
        try:
            return "\n".join((self.root / f"{name}.log").read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    def _wait(self, name: str, ready, timeout: float) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            proc = self.procs[name]
            if proc.poll() is not None:
                raise ClusterUnavailable(f"the {name} exited with {proc.returncode} at start-up:\n{self._log_tail(name)}")
            if ready():
                return
            time.sleep(0.3)
        raise ClusterUnavailable(f"the {name} did not become ready in {timeout:.0f} s:\n{self._log_tail(name)}")

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def start(self, timeout: float = 180.0) -> "Cluster":
        """Start the master and both workers; return when the master lists two alive workers."""
        if not (SPARK_HOME / "bin" / "spark-class").exists():
            raise ClusterUnavailable(f"no bin/spark-class in {SPARK_HOME}")
        self.port, self.ui_port = free_port(), free_port()
        self._spawn("master", [str(SPARK_HOME / "bin" / "spark-class"), "org.apache.spark.deploy.master.Master",
                               "--host", "127.0.0.1", "--port", str(self.port), "--webui-port", str(self.ui_port)],
                    base_env())
        self._wait("master", lambda: accepts(self.port) and accepts(self.ui_port), timeout)
        for i in (1, 2):
            self.start_worker(i)
        self.wait_workers(2, timeout)
        return self

    def start_worker(self, i: int) -> None:
        """Start worker ``i`` (1 core) against the master, in its own work folder."""
        work = self.root / f"w{i}"
        work.mkdir(exist_ok=True)
        self._spawn(f"worker{i}", [str(SPARK_HOME / "bin" / "spark-class"), "org.apache.spark.deploy.worker.Worker",
                                   "--cores", "1", "--memory", self.worker_memory, "--webui-port", str(free_port()),
                                   "--work-dir", str(work), self.master_url], base_env())

    def master_state(self) -> dict:
        """The master's JSON status page (workers, applications)."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=5) as r:
            return json.load(r)

    def alive_workers(self) -> int:
        try:
            return int(self.master_state().get("aliveworkers", 0))
        except (OSError, ValueError):
            return 0

    def wait_workers(self, n: int = 2, timeout: float = 120.0) -> None:
        """Wait until ``n`` workers are alive; a worker that exited is started again first."""
        for i in (1, 2):
            proc = self.procs.get(f"worker{i}")
            if proc is not None and proc.poll() is not None:
                self.start_worker(i)
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.alive_workers() >= n:
                return
            time.sleep(0.3)
        raise ClusterUnavailable(f"{n} workers did not register in {timeout:.0f} s:\n"
                                 f"{self._log_tail('worker1')}\n{self._log_tail('worker2')}")

    def wait_idle(self, timeout: float = 60.0) -> None:
        """Wait until no application holds the cluster (a finished driver's executors released)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                if not self.master_state().get("activeapps"):
                    return
            except (OSError, ValueError):
                pass
            time.sleep(0.3)

    def connect(self, name: str = "connect", *, with_dqkit: bool = True, timeout: float = 240.0) -> str:
        """Start (once) a Spark Connect server on ``local[2]``; return its ``sc://`` address.

        ``with_dqkit=False`` starts one whose Python workers cannot import dqkit.
        """
        if name in self.connect_urls:
            return self.connect_urls[name]
        port = free_port()
        cwd = self.root / name
        cwd.mkdir(exist_ok=True)
        env = base_env(pythonpath=with_dqkit)
        python = sys.executable
        if not with_dqkit:
            # the venv has dqkit installed (editable); a bare interpreter with the venv's site-packages
            # minus dqkit's path hook is simplest to get from a wrapper that hides the module
            python = str(_python_without_dqkit(cwd))
            env["PYSPARK_PYTHON"] = python
        self._spawn(name, [str(SPARK_HOME / "bin" / "spark-submit"),
                           "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
                           "--master", "local[2]", "--driver-memory", "1g",
                           "--conf", f"spark.connect.grpc.binding.port={port}",
                           "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
                           "--conf", "spark.ui.enabled=false",
                           "--conf", "spark.sql.shuffle.partitions=4",
                           "--conf", "spark.sql.session.timeZone=UTC",
                           "--conf", "spark.sql.execution.arrow.pyspark.enabled=true",
                           "--conf", f"spark.driver.extraJavaOptions={JVM_OPTS}",
                           "spark-internal"], env, cwd=cwd)
        self._wait(name, lambda: accepts(port), timeout)
        self.connect_urls[name] = f"sc://127.0.0.1:{port}"
        return self.connect_urls[name]

    def stop_process(self, name: str, grace: float = 10.0) -> None:
        """End one started process group: SIGTERM, then SIGKILL after ``grace`` seconds."""
        proc = self.procs.pop(name, None)
        self.connect_urls.pop(name, None)
        if proc is None or proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)
        except ProcessLookupError:
            pass

    def stop(self) -> None:
        """End every process group this cluster started (Connect servers, workers, then the master)."""
        for name in sorted(self.procs, key=lambda n: (n == "master", n.startswith("worker"))):
            self.stop_process(name)

    def executor_pids(self) -> list[int]:
        """PIDs of executor JVMs launched by this cluster's workers (their parent is one of them)."""
        workers = {p.pid for n, p in self.procs.items() if n.startswith("worker")}
        out = subprocess.run(["ps", "-eo", "pid,ppid,args"], capture_output=True, text=True).stdout
        pids = []
        for line in out.splitlines()[1:]:
            pid, ppid, args = line.split(None, 2)
            if int(ppid) in workers and "CoarseGrainedExecutorBackend" in args:
                pids.append(int(pid))
        return pids


def _python_without_dqkit(folder: Path) -> Path:
    """A wrapper interpreter for Python workers that cannot import dqkit (as on a server where it was
    never installed): it runs the venv's Python with a ``sitecustomize`` that blocks the module."""
    hide = folder / "hide"
    hide.mkdir(exist_ok=True)
    (hide / "sitecustomize.py").write_text(
        "import sys\n"
        "class _NoDqkit:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'dqkit' or name.startswith('dqkit.'):\n"
        "            raise ModuleNotFoundError(\"No module named 'dqkit'\", name='dqkit')\n"
        "        return None\n"
        "sys.meta_path.insert(0, _NoDqkit())\n")
    wrapper = folder / "python"
    wrapper.write_text(f"#!/bin/sh\nPYTHONPATH={hide}:$PYTHONPATH exec {sys.executable} \"$@\"\n")
    wrapper.chmod(0o755)
    return wrapper
