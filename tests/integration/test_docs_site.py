"""`dbt docs generate` on the embedded default, browsed in headless Chromium.

The generated site is served on 127.0.0.1 and opened in Debian's Chromium through Selenium
(chromedriver from the `chromium-driver` package). The test opens the lineage graph of
`merchant_balance_current` and reads the nodes the graph shows from the page's own graph service,
checks that its sources, snapshots and intermediate models are there, and saves a screenshot to
target/test-output/docs-lineage.png. A second check reads the generated manifest and catalog:
every model, source, snapshot and project macro has a description, and so does every column of the
public mart (the catalog's columns, so an undocumented new column fails).
"""

from __future__ import annotations

import functools
import json
import threading
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.support import BALANCE_VIEW_BASE, DbtProject

# One worker runs this file, with the balance-view tests whose built state the site is generated
# from (``balance_view_base``), so the docs site (a module fixture) and that state are built once.
pytestmark = [pytest.mark.integration, pytest.mark.slow, BALANCE_VIEW_BASE]

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOT = ROOT / "target" / "test-output" / "docs-lineage.png"
VIEW_ID = "model.payledger.merchant_balance_current"
UPSTREAM = {
    "source.payledger.payledger.payment_events",
    "source.payledger.payledger.reserve_policies",
    "source.payledger.payledger.merchants",
    "snapshot.payledger.snp_payledger__reserve_policies",
    "snapshot.payledger.snp_payledger__merchants",
    "model.payledger.int_payment_events_classified",
    "model.payledger.int_merchant_segment_versions",
    "model.payledger.int_reserve_policy_versions",
    "model.payledger.int_balance_slices_invalidated",
    "model.payledger.int_balance_merchants_invalidated",
    "model.payledger.int_merchant_daily_balances",
}
# The lineage graph's nodes as the page's own graph service holds them (cytoscape elements).
VISIBLE_NODES_JS = """
var injector = window.angular && angular.element(document.body).injector();
if (!injector) { return null; }
var graph = injector.get('graph').graph;
if (!graph || !graph.elements || !graph.elements.length) { return null; }
return graph.elements
    .filter(function (e) { return e.group === 'nodes' && !(e.classes || '').includes('hidden'); })
    .map(function (e) { return e.data.unique_id || e.data.id; });
"""


@pytest.fixture(scope="module")
def docs_site(balance_view_base, tmp_path_factory):
    """The docs site of a built warehouse (``balance_view_base``: a few merchants, their policies
    and events, built), served on 127.0.0.1; yields (base url, target folder).

    dbt writes into a target folder of this module's own, so no other test's build rewrites the
    site's manifest while it is served.
    """
    dbt = DbtProject(tmp_path_factory.mktemp("docs-dbt"))
    balance_view_base.restored()
    dbt("docs", "generate")
    target = dbt.artefacts / "target"
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(target))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", target
    finally:
        server.shutdown()


def chromium():
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = "/usr/bin/chromium"
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1600,1000"):
        options.add_argument(argument)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


def test_lineage_of_the_balance_view_shows_sources_snapshots_and_intermediate_models(docs_site):
    base, _ = docs_site
    browser = chromium()
    try:
        browser.get(f"{base}/#!/model/{VIEW_ID}?g_v=1")
        deadline, nodes = time.monotonic() + 90, None
        while nodes is None and time.monotonic() < deadline:
            time.sleep(1)
            nodes = browser.execute_script(VISIBLE_NODES_JS)
        assert nodes, "the lineage graph did not render within 90 s"
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        browser.save_screenshot(str(SCREENSHOT))
    finally:
        browser.quit()
    missing = UPSTREAM - set(nodes)
    assert not missing, f"lineage of merchant_balance_current lacks {sorted(missing)}; it shows {sorted(nodes)}"
    assert VIEW_ID in nodes
    assert SCREENSHOT.stat().st_size > 10_000


def test_every_node_macro_and_mart_column_is_documented(docs_site):
    _, target = docs_site
    manifest = json.loads((target / "manifest.json").read_text())
    catalog = json.loads((target / "catalog.json").read_text())
    undocumented = [
        uid
        for collection in ("nodes", "sources", "macros")
        for uid, node in manifest[collection].items()
        if node.get("package_name") == "payledger"
        and node.get("resource_type") in ("model", "snapshot", "source", "macro", "seed")
        and not (node.get("description") or "").strip()
    ]
    assert undocumented == [], undocumented
    documented = {name for name, column in manifest["nodes"][VIEW_ID]["columns"].items() if column["description"].strip()}
    actual = {name.lower() for name in catalog["nodes"][VIEW_ID]["columns"]}
    assert actual and actual <= documented, f"undocumented columns of the mart: {sorted(actual - documented)}"
