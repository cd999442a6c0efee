"""The notebooks in JupyterLab, as a person uses them: a real browser (headless Chromium driven by Selenium) on a
JupyterLab server on 127.0.0.1 (`make lab`'s command, with its token), in a scratch clone of this working tree with no
data (a bare clone). Each notebook that runs on a bare clone is opened, Run All (the Run menu), and saved (Ctrl+S);
then the saved notebook has no error output, its first output says where its artefacts go, the kernel is idle, and
`git status` of the clone is clean: nothing published, nothing tracked changed. A notebook that needs data a bare
clone lacks must end in the clear message that says how to get it.

Skips with the reason where Chromium, its driver (Debian's chromium-driver) or selenium is missing; .ci/run installs
them.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from romae.runner import lab

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
DRIVER = shutil.which("chromedriver")
try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
except ImportError:  # pragma: no cover - the test extra installs it
    webdriver = None

MISSING = ("chromium is not installed" if CHROMIUM is None else "chromedriver is not installed (apt-get install "
           "chromium-driver)" if DRIVER is None else "selenium is not installed (pip install -e '.[test]')"
           if webdriver is None else "")
browser = pytest.mark.skipif(bool(MISSING), reason=MISSING or "-")

# notebook -> what Run All must end in on a bare clone: None (every cell runs, no error) or the text of the clear error
NOTEBOOKS = {
    "00_rope_theory.ipynb": None,
    "01_position_reconstruction.ipynb": None,
    "02_frequency_retention.ipynb": None,
    "03_compute_cost.ipynb": None,
    "04_mask_token_init.ipynb": None,
    "10_tiny_imagenet.ipynb": "make data",
    "11_esc50.ipynb": "make data",
    "12_uea_classification.ipynb": "make data NAMES=uea:",
    "13_elasticc.ipynb": None,
    "14_pendulum.ipynb": None,  # once overwrote the published paper Table 5 with a smoke run
    "15_interpolation_spiral_synthetic.ipynb": None,
    "16_physionet_interpolation.ipynb": "make data",
}
RUN_LIMIT = 600  # seconds a notebook's Run All may take here
STATE = """const panel = window.jupyterapp.shell.currentWidget, cells = panel.content.model.cells;
let running = 0, ran = 0;
for (let i = 0; i < cells.length; i++) { const c = cells.get(i);
  if (c.type === 'code') { running += c.executionState === 'running'; ran += c.executionCount !== null; } }
return {running: running, ran: ran, status: panel.sessionContext.session.kernel.status};"""


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", f"safe.directory={repo}", "-C", str(repo), *args], check=True,
                          capture_output=True, text=True).stdout


def scratch_clone(dest: Path) -> Path:
    """A clone of this working tree as it is (tracked and untracked files git does not ignore), committed."""
    subprocess.run(["git", "-c", f"safe.directory={ROOT}", "clone", "-q", "--shared", str(ROOT), str(dest)], check=True,
                   capture_output=True)
    here = set(filter(None, _git(ROOT, "ls-files", "-z", "-co", "--exclude-standard").split("\0")))
    for rel in here:
        if (ROOT / rel).is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, dest / rel)
    for rel in set(filter(None, _git(dest, "ls-files", "-z").split("\0"))) - here:  # deleted in the working tree
        (dest / rel).unlink(missing_ok=True)
    for key, value in (("user.email", "test@example.invalid"), ("user.name", "test")):
        _git(dest, "config", key, value)
    _git(dest, "add", "-A")
    if _git(dest, "status", "--porcelain"):
        _git(dest, "commit", "-q", "-m", "the working tree")
    return dest


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str):
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())


class Lab:
    """A JupyterLab server in the clone and a headless Chromium on it."""

    def __init__(self, repo: Path, home: Path):
        self.repo, self.home, self.port, self.token = repo, home, _free_port(), secrets.token_hex(16)
        env = by_hand_env(repo, home)
        cmd = lab.command(["--no-browser", f"--ServerApp.port={self.port}", "--ServerApp.port_retries=0",
                           "--LabApp.expose_app_in_browser=True"], root=repo, token=self.token)  # the page is read
        self.log = open(home / "lab.log", "w")
        self.server = subprocess.Popen(cmd, cwd=repo, env=env, stdout=self.log, stderr=subprocess.STDOUT)
        self.driver = None
        try:
            self._start(home)
        except BaseException:
            self.close()
            raise

    def _start(self, home: Path) -> None:
        self.base = f"http://127.0.0.1:{self.port}"
        for _ in range(120):
            try:
                _get(f"{self.base}/api/status?token={self.token}")
                break
            except OSError:
                if self.server.poll() is not None:
                    raise RuntimeError(f"JupyterLab exited: {(home / 'lab.log').read_text()[-3000:]}")
                time.sleep(0.5)
        else:
            raise RuntimeError("JupyterLab did not answer in 60 s")
        opts = webdriver.ChromeOptions()
        opts.binary_location = CHROMIUM
        for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    f"--user-data-dir={home / 'chromium'}", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync", "--window-size=1400,1000"):
            opts.add_argument(arg)
        self.driver = webdriver.Chrome(options=opts, service=Service(DRIVER))

    def close(self) -> None:
        try:
            if self.driver is not None:
                self.driver.quit()
        finally:
            self.server.terminate()
            try:
                self.server.wait(30)
            except subprocess.TimeoutExpired:
                self.server.kill()
            self.log.close()

    def end_sessions(self) -> None:
        """Shut every kernel down, as closing the notebook would: the next notebook starts alone."""
        for session in _get(f"{self.base}/api/sessions?token={self.token}"):
            req = urllib.request.Request(f"{self.base}/api/sessions/{session['id']}?token={self.token}", method="DELETE")
            urllib.request.urlopen(req, timeout=30).close()

    def wait(self, condition, limit: float, what: str, every: float = 0.5):
        end = time.time() + limit
        while time.time() < end:
            try:
                found = condition()
            except Exception:  # noqa: BLE001 - the page is still building
                found = None
            if found:
                return found
            time.sleep(every)
        raise AssertionError(f"{what}: not within {limit:.0f} s")

    def run_all(self, name: str) -> float:
        """Open `name`, Run All from the Run menu, wait until every cell ran (or one failed) and the kernel is idle,
        save with Ctrl+S; the seconds Run All took. Its kernel is shut down after, whatever happened."""
        try:
            return self._run_all(name)
        finally:
            self.end_sessions()

    def _run_all(self, name: str) -> float:
        d = self.driver
        # a workspace of its own, reset: the page shows this notebook only, whatever was open before
        d.get(f"{self.base}/lab/workspaces/{Path(name).stem}/tree/{name}?reset&token={self.token}")
        self.wait(lambda: d.find_elements(By.CSS_SELECTOR, ".jp-Notebook .jp-Cell"), 120, f"{name} opens")
        self.wait(lambda: d.execute_script(STATE)["status"] == "idle", 120, f"{name}'s kernel starts")
        began = time.time()
        for attempt in range(2):  # a click on a menu not yet ready does nothing: tried once more
            self.wait(lambda: d.find_element(By.XPATH, "//li[contains(@class,'lm-MenuBar-item')][.//*[text()='Run']]"),
                      30, "the Run menu").click()
            self.wait(lambda: d.find_element(By.CSS_SELECTOR, "li.lm-Menu-item[data-command='runmenu:run-all']"),
                      30, "Run All Cells in the Run menu").click()
            try:
                self.wait(lambda: (lambda st: st["running"] or st["ran"])(d.execute_script(STATE)), 20, "Run All starts")
                break
            except AssertionError:
                if attempt:
                    raise

        def done():  # the notebook's own model: no cell queued or running, the kernel idle
            state = d.execute_script(STATE)
            return state["ran"] and not state["running"] and state["status"] == "idle"
        try:
            self.wait(done, RUN_LIMIT, f"Run All of {name}", every=1.0)
        except AssertionError:
            d.save_screenshot(str(self.home / f"{name}.png"))
            raise AssertionError(f"Run All of {name}: not within {RUN_LIMIT} s ({d.execute_script(STATE)}; a "
                                 f"screenshot in {self.home})") from None
        seconds = time.time() - began
        self.shown = d.execute_script("return window.jupyterapp.shell.currentWidget.content.model.toJSON()")
        saved = self.repo / "notebooks" / name
        before = saved.stat().st_mtime_ns
        d.find_element(By.CSS_SELECTOR, ".jp-Notebook").click()
        d.find_element(By.TAG_NAME, "body").send_keys(Keys.CONTROL, "s")
        self.wait(lambda: saved.stat().st_mtime_ns != before and not d.find_elements(By.CSS_SELECTOR, ".jp-mod-dirty"),
                  60, f"{name} saved")
        self.idle = d.execute_script(STATE)["status"] == "idle"
        return seconds


def by_hand_env(repo: Path, home: Path) -> dict:
    """The environment of a person's shell on a bare clone: no ROMAE_* settings (no data, no reports folder named),
    HOME and the tools' state in a scratch folder, the clone's own package first."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ROMAE_", "JUPYTER", "PYTHONPATH"))}
    env.update(HOME=str(home), PYTHONPATH=str(repo), MPLCONFIGDIR=str(home / "mpl"), IPYTHONDIR=str(home / "ipy"),
               JUPYTER_CONFIG_DIR=str(home / "jupyter"), PYDEVD_DISABLE_FILE_VALIDATION="1")
    return env


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    try:
        top = _git(ROOT, "rev-parse", "--show-toplevel").strip()
    except (OSError, subprocess.CalledProcessError) as e:
        pytest.skip(f"no git checkout to clone the working tree from: {getattr(e, 'stderr', '') or e}")
    if Path(top).resolve() != ROOT.resolve():
        pytest.skip(f"{ROOT} is not a git checkout of its own (inside {top}): no clone to run the notebooks in")
    base = tmp_path_factory.mktemp("lab")
    repo = scratch_clone(base / "clone")
    home = base / "home"
    home.mkdir()
    return repo, home, reports_files(repo)


@pytest.fixture(scope="module")
def session(clone):
    repo, home, tree = clone
    lab_ = Lab(repo, home)
    yield lab_, tree
    lab_.close()


def test_nbconvert_execute_changes_nothing_tracked(clone):
    """`jupyter nbconvert --execute` by hand: its executed copy is git-ignored, its artefacts go to runs/interactive/."""
    repo, home, tree = clone
    proc = subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute",
                           "notebooks/00_rope_theory.ipynb"], cwd=repo, env=by_hand_env(repo, home),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    executed = json.loads((repo / "notebooks" / "00_rope_theory.nbconvert.ipynb").read_text())
    first = next(o for o in outputs(executed) if o.get("text"))
    assert "runs/interactive/" in "".join(first["text"])
    assert list((repo / "runs" / "interactive" / "figures").glob("*.png"))
    assert _git(repo, "status", "--porcelain", "--untracked-files=all") == ""
    assert reports_files(repo) == tree


def reports_files(repo: Path) -> dict:
    """Every file under reports/ (git-ignored ones too: reports/smoke/ is), but the record's advisory lock files."""
    return {p: p.read_bytes() for p in sorted((repo / "reports").rglob("*")) if p.is_file() and p.name != ".lock"}


def outputs(nb: dict) -> list[dict]:
    return [o for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])]


@browser
@pytest.mark.parametrize("name", list(NOTEBOOKS))
def test_run_all_in_jupyterlab_changes_nothing_tracked(session, name):
    lab_, tree = session
    seconds = lab_.run_all(name)
    print(f"{name}: Run All {seconds:.0f} s in JupyterLab")
    outs = outputs(lab_.shown)  # what the page shows after Run All
    assert not outputs(json.loads((lab_.repo / "notebooks" / name).read_text()))  # saved as committed
    errors = [o for o in outs if o["output_type"] == "error"]
    expected = NOTEBOOKS[name]
    if expected is None:
        assert not errors, f"{name}: {errors[0]['ename']}: {errors[0]['evalue'][:500]}"
    else:
        assert errors and expected in errors[0]["evalue"], f"{name} should end in {expected!r}: {errors or outs[-1:]}"
    first = next(o for o in outs if o.get("text") or o.get("data"))
    assert "runs/interactive/" in "".join(first.get("text", "")), f"{name}'s first output: {first}"
    assert lab_.idle  # the kernel idle when the run ended
    status = _git(lab_.repo, "status", "--porcelain", "--untracked-files=all")
    assert status == "", f"after Run All and save of {name}, git status says:\n{status}\n" \
        f"{_git(lab_.repo, 'diff')[:3000]}"
    now = reports_files(lab_.repo)
    assert now == tree, f"{name} changed reports/: {sorted(set(now) ^ set(tree)) or 'contents'}"


# ----------------------------------------------------------------------------- make lab's command and its save hook

def test_lab_listens_on_localhost_with_its_token():
    cmd = lab.command(["--no-browser"])
    assert "--no-browser" in cmd and cmd[-1].startswith("--IdentityProvider.token=")
    assert any(a.endswith("root_dir=" + str(ROOT / "notebooks")) for a in cmd)
    assert cmd[-2:] == ["--ServerApp.ip=127.0.0.1", cmd[-1]] and len(cmd[-1].split("=", 1)[1]) >= 32  # last: wins
    for bad in (["--ip=0.0.0.0"], ["--ServerApp.ip", "0.0.0.0"], ["--IdentityProvider.token="],
                ["--IdentityProvider.token", ""], ["--ServerApp.token=''"], ["--ServerApp.password=x"]):
        with pytest.raises(SystemExit, match="127.0.0.1"):
            lab.command(bad)
    assert "ROMAE_REPORTS" not in lab.environment() and "ROMAE_STOP_FILE" not in lab.environment()


def _executed(nb: dict) -> dict:
    nb = json.loads(json.dumps(nb))
    nb["metadata"]["language_info"].update(version="3.11.2", mimetype="text/x-python", file_extension=".py")
    nb["metadata"]["papermill"] = {"duration": 1.0}
    for i, c in enumerate(nb["cells"]):
        if c["cell_type"] == "code":
            c.update(execution_count=i + 1, outputs=[{"output_type": "stream", "name": "stdout", "text": "x\n"}])
            c["metadata"]["execution"] = {"iopub.status.busy": "2026-11-28T00:00:00"}
    return nb


@pytest.mark.parametrize("path", sorted((ROOT / "notebooks").glob("*.ipynb")), ids=lambda p: p.name)
def test_saving_a_numbered_notebook_gives_it_back_as_committed(path):
    committed = json.loads(path.read_text())
    model = {"type": "notebook", "content": _executed(committed)}
    lab.strip_on_save(model, path.name)  # as JupyterLab names it: relative to its root, notebooks/
    assert json.loads(json.dumps(model["content"])) == committed


def test_a_notebook_of_your_own_keeps_its_outputs(tmp_path):
    committed = json.loads((ROOT / "notebooks" / "00_rope_theory.ipynb").read_text())
    for name in ("my_analysis.ipynb", "00_rope_theory-Copy1.ipynb", "17_mine.ipynb"):  # JupyterLab's Duplicate: -Copy1
        model = {"type": "notebook", "content": _executed(committed)}
        lab.strip_on_save(model, name)
        assert any(c.get("outputs") for c in model["content"]["cells"]), name
    text = {"type": "file", "content": "x"}
    lab.strip_on_save(text, "00_rope_theory.ipynb")
    assert text == {"type": "file", "content": "x"}
