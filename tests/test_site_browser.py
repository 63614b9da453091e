"""The published asv site, opened in headless Chromium: the launch-overhead graph shows data.

A smoke run of the real suite under the CUDA simulator (via `launchbench
asv-releases`, the same path the GPU results take) is published with
`launchbench site`, served on 127.0.0.1 and opened in Debian's Chromium
through Selenium and chromedriver. The check reads the points flot actually
plotted; a negative control (the same site with the results nulled) shows
that the check fails when there is no data. The screenshot is kept in
tests/artifacts/.

Skips (with the reason) where Chromium or chromedriver is missing, unless
LAUNCHBENCH_REQUIRE_BROWSER=1 (set by .ci/run), where that is a failure.
"""
import functools
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from launchbench.output import site

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
BENCHMARK = "bench_launch.TimeLaunchPreconfigured.time_launch"
#: Three parameter combinations keep the simulator run to a few seconds.
SELECTION = r"TimeLaunchPreconfigured.time_launch\([0-2], '\[1, 1\]'[,)]"
CHROME_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--no-first-run", "--window-size=1280,900"]

pytestmark = pytest.mark.slow

#: JavaScript: how many finite points flot plotted on the main graph (-1: no plot yet).
COUNT_POINTS = """
var p = window.jQuery && jQuery('#main-graph').data('plot');
if (!p) return -1;
var n = 0;
p.getData().forEach(function (s) {
  s.data.forEach(function (pt) { if (pt && pt[1] !== null && isFinite(pt[1])) n++; });
});
return n;
"""


def _find_browser():
    chromium = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
    driver = shutil.which("chromedriver") or next(
        (p for p in ("/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver") if os.path.exists(p)), None)
    missing = [name for name, path in (("chromium", chromium), ("chromedriver", driver)) if not path]
    if missing:
        reason = f"{' and '.join(missing)} not found (apt-get install -y chromium chromium-driver)"
        if os.environ.get("LAUNCHBENCH_REQUIRE_BROWSER") == "1":
            pytest.fail(reason + "; LAUNCHBENCH_REQUIRE_BROWSER=1 says this machine must run it")
        pytest.skip(reason)
    return chromium, driver


@pytest.fixture(scope="module")
def browser():
    chromium, driver_path = _find_browser()
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = chromium
    for flag in CHROME_FLAGS:
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def smoke_results(tmp_path_factory):
    """asv results of a simulator smoke run of the real suite, as they would be committed."""
    work = tmp_path_factory.mktemp("asvsmoke")
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1", "LAUNCHBENCH_SMOKE": "1",
           "NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS": "0"}
    cmd = [sys.executable, "-m", "launchbench", "asv-releases", "--env", f"0.30.4={sys.executable}",
           "--allow-version-mismatch", "--results-dir", str(work / "committed"),
           "--ledger", str(work / "ledger"), "--html-dir", str(work / "unused-html"),
           "-b", SELECTION, "-a", "repeat=1", "-a", "number=1", "-a", "warmup_time=0"]
    proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = work / "committed"
    site.write_ledger_manifest(results, {"v2": "0.30.4"})
    # the ledger that measured them is gone on a reader's machine: site must rebuild it
    shutil.rmtree(work / "ledger")
    return results


def _serve(directory: Path):
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def _plotted_points(driver, url: str, timeout: float = 30.0, settle: float = 1.0):
    """Points on the graph once they appear (or, with none, *settle* s after the plot exists).

    Returns -1 when no plot was drawn at all before *timeout*.
    """
    driver.get(url)
    deadline = time.monotonic() + timeout
    count, plotted_at = -1, None
    while time.monotonic() < deadline:
        count = driver.execute_script(COUNT_POINTS)
        if count > 0:
            break
        if count == 0:
            plotted_at = plotted_at or time.monotonic()
            if time.monotonic() - plotted_at > settle:
                break
        time.sleep(0.1)
    return count


def _config_for(work: Path) -> Path:
    """The checkout's asv.conf.json with results/site paths inside *work* (user results untouched)."""
    from launchbench.output.asvtools import derive_config, load_config, write_asv_config

    conf = derive_config(load_config(ROOT / "asv.conf.json"), ROOT, results_dir=work / "results",
                         env_dir=work / "env")
    return write_asv_config(conf, work / "asv.conf.json")


def test_launch_overhead_graph_shows_points(browser, smoke_results, tmp_path):
    html = site.build_site(_config_for(tmp_path), sources=[smoke_results], html_dir=tmp_path / "html",
                           echo=lambda line: None)
    index = (html / "index.html").read_text()
    assert "https://" not in "".join(line for line in index.splitlines() if "<script" in line)
    server = _serve(html)
    try:
        points = _plotted_points(browser, f"http://127.0.0.1:{server.server_port}/index.html#{BENCHMARK}")
        ARTIFACTS.mkdir(exist_ok=True)
        browser.save_screenshot(str(ARTIFACTS / "asv-launch-overhead.png"))
        title = browser.execute_script("return jQuery('#title').text() || document.title")
    finally:
        server.shutdown()
    assert points == 3, f"expected 3 plotted points (args 0..2 at [1, 1]), got {points}; page {title!r}"
    assert (ARTIFACTS / "asv-launch-overhead.png").stat().st_size > 10_000


def test_check_fails_without_data(browser, smoke_results, tmp_path):
    """Negative control: the same results with every value nulled plot no point."""
    empty = tmp_path / "empty"
    shutil.copytree(smoke_results, empty)
    for path in empty.glob("*/*.json"):
        if path.name == "machine.json":
            continue
        data = json.loads(path.read_text())
        cols = data["result_columns"]
        for entry in data["results"].values():
            entry[cols.index("result")] = [None] * len(entry[cols.index("result")])
        path.write_text(json.dumps(data))
    html = site.build_site(_config_for(tmp_path), sources=[empty], html_dir=tmp_path / "html",
                           echo=lambda line: None)
    server = _serve(html)
    try:
        points = _plotted_points(browser, f"http://127.0.0.1:{server.server_port}/index.html#{BENCHMARK}",
                                 timeout=10.0, settle=2.0)
    finally:
        server.shutdown()
    assert points in (0, -1), f"no data, yet {points} points plotted"
