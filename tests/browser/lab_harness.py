"""JupyterLab in headless Chromium, driven by Playwright (see /work/shared/notes/jupyter-testing.md).

:class:`Lab` serves a temporary copy of ``tests/browser/notebooks`` with its own config,
settings and runtime folders (autosave and news toasts off), exposing ``window.jupyterapp``
so tests can wait for a usable kernel and run all cells without awaiting the command.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

NOTEBOOKS = Path(__file__).parent / "notebooks"
ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"
LABEXTENSIONS = Path(__file__).resolve().parents[2] / "labextension"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    # Offline as CI is, and failing fast: a name other than this machine's does not resolve.
    # On CI a request to a CDN (Voila's page asks for Font Awesome) hung instead of failing,
    # and the page's "load" never came within 90 s.
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1",
]

_READY_JS = """() => {
  const app = window.jupyterapp; if (!app) return false;
  const w = app.shell.currentWidget; if (!w || !w.sessionContext) return false;
  const sc = w.sessionContext; const k = sc.session && sc.session.kernel;
  return sc.isReady && !!k && k.connectionStatus === 'connected' && k.status === 'idle';
}"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Lab:
    """A JupyterLab server on a temporary copy of the test notebooks (``app="notebook"``:
    Notebook 7, which runs JupyterLab's notebook and extensions in its own shell)."""

    def __init__(self, app: str = "lab") -> None:
        self.app = app
        self.root = Path(tempfile.mkdtemp(prefix="agentnb-lab-"))
        self.port = _free_port()
        self.token = secrets.token_hex(16)
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 60) -> Lab:
        work = self.root / "work"
        shutil.copytree(NOTEBOOKS, work)
        settings = self.root / "settings"
        for plugin, value in {
            "@jupyterlab/docmanager-extension/plugin": {"autosave": False},
            "@jupyterlab/apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False},
        }.items():
            path = settings / (plugin + ".jupyterlab-settings")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(value))
        # This checkout's extension before any installed copy (Notebook 7 serves the first it
        # finds on the data path, where an editable install may link another checkout's).
        data = self.root / "data"
        (data / "labextensions").mkdir(parents=True)
        (data / "labextensions" / "agentnb").symlink_to(LABEXTENSIONS / "agentnb")
        env = {
            **os.environ,
            "JUPYTER_PATH": os.pathsep.join([str(data), *filter(None, [os.environ.get("JUPYTER_PATH")])]),
            "JUPYTER_CONFIG_DIR": str(self.root / "config"),
            "JUPYTER_RUNTIME_DIR": str(self.root / "runtime"),
            "JUPYTERLAB_SETTINGS_DIR": str(settings),
            "JUPYTERLAB_WORKSPACES_DIR": str(self.root / "workspaces"),
        }
        app = "LabApp" if self.app == "lab" else "JupyterNotebookApp"
        cmd = [
            *(
                [str(Path(sys.executable).parent / "jupyter"), "lab"]
                if self.app == "lab"
                else [sys.executable, "-m", "notebook"]
            ),
            "--no-browser",
            "--allow-root",
            "--ip=127.0.0.1",
            f"--port={self.port}",
            f"--IdentityProvider.token={self.token}",
            f"--ServerApp.root_dir={work}",
            f"--{app}.expose_app_in_browser=True",
            # agentnb's own extension (%%agent cells as Markdown, saved outputs' static copies), from this checkout.
            f"--{app}.extra_labextensions_path={LABEXTENSIONS}",
        ]
        self.log = open(self.root / "lab.log", "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(cmd, env=env, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{self.url}/api/status?token={self.token}", timeout=2) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(0.3)
        raise RuntimeError(f"JupyterLab did not start; see {self.root / 'lab.log'}")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def work(self) -> Path:
        """The folder the server serves (the notebooks' copy; a kernel's working directory)."""
        return self.root / "work"

    def notebook_url(self, name: str) -> str:
        if self.app != "lab":
            return f"{self.url}/notebooks/{name}?token={self.token}"
        # One workspace per notebook, so a tab left open by another test is not restored here.
        workspace = Path(name).stem.replace("_", "-")
        return f"{self.url}/lab/workspaces/{workspace}/tree/{name}?reset&token={self.token}"

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
            self.log.close()
        shutil.rmtree(self.root, ignore_errors=True)


class Voila:
    """A Voila server rendering one notebook from a temporary copy of the test notebooks."""

    def __init__(self, notebook: str) -> None:
        self.notebook = notebook
        self.root = Path(tempfile.mkdtemp(prefix="agentnb-voila-"))
        self.port = _free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 60) -> Voila:
        work = self.root / "work"
        shutil.copytree(NOTEBOOKS, work)
        env = {
            **os.environ,
            "JUPYTER_CONFIG_DIR": str(self.root / "config"),
            "JUPYTER_RUNTIME_DIR": str(self.root / "runtime"),
        }
        cmd = [
            str(Path(sys.executable).parent / "voila"),
            str(work / self.notebook),
            "--no-browser",
            f"--port={self.port}",
            "--Voila.ip=127.0.0.1",
            "--ServerApp.allow_root=True",
        ]
        self.log = open(self.root / "voila.log", "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(cmd, env=env, stdout=self.log, stderr=subprocess.STDOUT, cwd=work)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return self
            except OSError:
                time.sleep(0.3)
        raise RuntimeError(f"Voila did not start; see {self.root / 'voila.log'}")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
            self.log.close()
        shutil.rmtree(self.root, ignore_errors=True)


def open_notebook(page: Any, lab: Lab, name: str, timeout_ms: int = 60_000) -> None:
    """Open a notebook and wait until its kernel is really usable."""
    page.goto(lab.notebook_url(name))
    page.wait_for_function(_READY_JS, timeout=timeout_ms)
    # More room for the notebook (and the screenshots): fold the file browser away.
    page.evaluate(
        "() => { const a = window.jupyterapp; if (a.shell.leftCollapsed === false) a.commands.execute('application:toggle-left-area'); }"
    )


def open_and_run_all(page: Any, lab: Lab, name: str, timeout_ms: int = 60_000) -> None:
    """Open a notebook, wait until its kernel is really usable, start Run All (not awaited)."""
    open_notebook(page, lab, name, timeout_ms)
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
    # The first prompt shows [*] or [n] once Run All took effect.
    page.wait_for_function(
        """() => { const p = document.querySelector('.jp-InputArea-prompt');
                   return !!p && /\\[(\\*|\\d+)\\]/.test(p.textContent); }""",
        timeout=timeout_ms,
    )


def screenshot(locator: Any, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / name
    locator.screenshot(path=str(path))
    return path


_SAVE_JS = """async (state) => {
  const app = window.jupyterapp, command = '@jupyter-widgets/jupyterlab-manager:saveWidgetState';
  if (app.commands.isToggled(command) !== state) await app.commands.execute(command);
  if (app.commands.isToggled(command) !== state) throw new Error('the widget-state setting did not change');
  await app.shell.currentWidget.context.save();
}"""


def save(page: Any, widget_state: bool) -> None:
    """Save the open notebook as a person would (File > Save), with or without the widgets' state
    (Settings > Save Widget State Automatically)."""
    page.evaluate(_SAVE_JS, widget_state)


def output_data(page: Any, cell: int, output: int, mime: str = "text/html") -> str:
    """What the front end holds (and would save) for output ``output`` of cell ``cell``."""
    return str(
        page.evaluate(
            """([c, o, mime]) => { const cells = window.jupyterapp.shell.currentWidget.content.model.cells;
                 const outs = cells.get(c).outputs; if (!outs || outs.length <= o) return '';
                 return String(outs.get(o).data[mime] || ''); }""",
            [cell, output, mime],
        )
    )


def shutdown_kernel(page: Any) -> None:
    """Shut down the open notebook's kernel (the next page that opens it starts a new one)."""
    page.evaluate("async () => { await window.jupyterapp.shell.currentWidget.sessionContext.shutdown(); }")
