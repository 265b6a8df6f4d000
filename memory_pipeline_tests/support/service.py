"""A real ``memory-pipeline serve`` / ``mcp --http`` process on loopback, for tests and benchmarks."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

CLI = [sys.executable, "-m", "memory_pipeline.cli.main"]


def service_env(db_url: str, model_url: str, home: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("MEMORY_PIPELINE_", "OLLAMA_", "DAGSTER_HOME"))
    }
    env.update(
        MEMORY_PIPELINE_HOME=str(home),
        MEMORY_PIPELINE_DATABASE_URL=db_url,
        MEMORY_PIPELINE_EMBED_PROVIDER="ollama",
        OLLAMA_HOST=model_url,
    )
    return env


class ServerProcess:
    """``memory-pipeline <command> --port 0``: reads the URL it prints, stops it on close."""

    def __init__(self, command: list[str], env: dict[str, str]):
        self.proc = subprocess.Popen(
            CLI + command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        self.stderr: list[str] = []
        line = self.first_line = self.proc.stdout.readline()
        threading.Thread(target=self._drain, daemon=True).start()
        if "http://" not in line:
            self.proc.wait(timeout=30)
            raise RuntimeError(f"server did not start: {line!r} {self.proc.stderr.read()}")
        self.url = line.split("http://", 1)[1].split()[0]
        self.url = "http://" + self.url.removesuffix("/mcp")

    def _drain(self) -> None:
        for line in self.proc.stderr:
            self.stderr.append(line)

    def close(self) -> int:
        self.proc.terminate()
        try:
            return self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(timeout=30)
