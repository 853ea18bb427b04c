"""The console over plain HTTP: nothing without a login, and forms that other sites cannot post."""

from __future__ import annotations

import subprocess
from pathlib import Path
from urllib.parse import quote

import httpx
from tests.console.conftest import TOKENS, TRAILS, Served, environment, record, serving

PAGES = (
    "/console/",
    "/console/session?s=",
    "/console/download?format=bundle&s=",
    "/console/search?q=polished",
    "/console/queries?name=sessions&run=1",
    "/console/sparql",
    "/console/verify",
    "/console/compliance",
    "/console/charts",
)


def test_a_page_without_a_login_is_the_login_form_and_nothing_else(served: Served) -> None:
    a = served.sessions["A"]
    with httpx.Client(base_url=served.url) as client:
        for path in PAGES:
            for cookies in ({}, {"trails_console": "forged"}):
                client.cookies.clear()
                client.cookies.update(cookies)
                asked = path + (quote(a, safe="") if path.endswith("=") else "")
                response = client.get(asked)
                assert response.status_code == 401, path
                # the form, which returns to the page asked for: nothing else of the store
                text = response.text.replace(asked.replace("&", "&amp;"), "")
                assert 'name="token"' in text
                for secret in ("urn:trails:session", "session-A", "did:local", "polished", "USD"):
                    assert secret not in text, (path, secret)
        posted = client.post("/console/sparql", data={"query": "SELECT * WHERE { ?s ?p ?o }"})
        assert posted.status_code == 401 and "urn:trails" not in posted.text
        root = client.get("/")
        assert root.status_code == 303 and root.headers["location"] == "/console/"


def test_a_wrong_token_is_refused_and_a_right_one_sets_a_strict_httponly_cookie(
    served: Served,
) -> None:
    with httpx.Client(base_url=served.url) as client:
        wrong = client.post("/console/login", data={"token": "not-a-token"})
        assert wrong.status_code == 401 and "unknown token" in wrong.text
        assert "set-cookie" not in wrong.headers
        right = client.post(
            "/console/login", data={"token": TOKENS["bob"], "next": "https://elsewhere.example/"}
        )
        assert right.status_code == 303 and right.headers["location"] == "/console/"
        cookie = right.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=strict" in cookie
        assert TOKENS["bob"].lower() not in cookie  # the token itself never goes back


def test_posts_without_the_forms_csrf_value_are_refused(served: Served) -> None:
    with httpx.Client(base_url=served.url) as client:
        client.post("/console/login", data={"token": TOKENS["auditor"]})
        refused = client.post("/console/verify", data={"mode": "full"})
        assert refused.status_code == 403 and "did not come from the console" in refused.text
        forged = client.post("/console/sparql", data={"query": "ASK {}", "csrf": "guess"})
        assert forged.status_code == 403
        page = client.get("/console/verify")
        csrf = page.text.split('name="csrf" value="', 1)[1].split('"', 1)[0]
        done = client.post("/console/verify", data={"mode": "quick", "csrf": csrf})
        assert done.status_code == 200 and "graph(s) checked" in done.text


def test_updates_are_refused_in_the_sparql_editor(served: Served) -> None:
    with httpx.Client(base_url=served.url) as client:
        client.post("/console/login", data={"token": TOKENS["auditor"]})
        page = client.get("/console/sparql")
        csrf = page.text.split('name="csrf" value="', 1)[1].split('"', 1)[0]
        update = client.post("/console/sparql", data={"query": "DROP ALL", "csrf": csrf})
        assert update.status_code == 200 and 'class="error"' in update.text
        assert 'table class="results"' not in update.text
        count = client.post(
            "/console/sparql",
            data={
                "query": "PREFIX trails: <https://w3id.org/trails/ns#> "
                "SELECT (COUNT(DISTINCT ?s) AS ?n) WHERE { GRAPH ?g { ?s a trails:Session } }",
                "csrf": csrf,
            },
        )
        assert "<td>4</td>" in count.text


def test_search_follows_erasure_and_recording(tmp_path: Path) -> None:
    """The search index beside the store follows an erasure made by another process while the
    server was stopped: erased content is no longer found, the rest still is."""
    sessions = record(tmp_path)

    def search(url: str, word: str) -> str:
        with httpx.Client(base_url=url) as client:
            client.post("/console/login", data={"token": TOKENS["auditor"]})
            return client.get("/console/search", params={"q": word}).text

    with serving(tmp_path) as url:
        assert "<mark>polished</mark>" in search(url, "polished")
        assert "<mark>inbox</mark>" in search(url, "inbox")  # bob's session B
    erased = subprocess.run(
        [TRAILS, "--store", "store", "erase", "--session", sessions["A"], "--reason", "request"],
        cwd=tmp_path,
        env=environment(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert erased.returncode == 0, erased.stderr
    with serving(tmp_path) as url:
        assert "<mark>" not in search(url, "polished")
        assert "<mark>inbox</mark>" in search(url, "inbox")


def test_queries_run_from_the_console_are_in_the_access_log(served: Served) -> None:
    with httpx.Client(base_url=served.url) as client:
        client.post("/console/login", data={"token": TOKENS["bob"]})
        page = client.get("/console/sparql")
        csrf = page.text.split('name="csrf" value="', 1)[1].split('"', 1)[0]
        ran = client.post(
            "/console/sparql",
            data={"query": 'SELECT ("console-marker-7" AS ?m) WHERE {}', "csrf": csrf},
        )
        assert "<td>console-marker-7</td>" in ran.text
        client.get("/console/queries", params={"name": "sessions", "run": "1", "status": "ok"})
        log = client.get(
            "/access-log/sparql",
            params={
                "query": "SELECT ?o WHERE { ?s ?p ?o FILTER(isLiteral(?o) && "
                '(CONTAINS(STR(?o), "console-marker-7") || STR(?o) = "did:local:bob")) }'
            },
            headers={
                "Authorization": f"Bearer {TOKENS['auditor']}",
                "Accept": "text/csv",
            },
        )
        assert log.status_code == 200, log.text
        values = log.text.splitlines()[1:]
        assert any("console-marker-7" in v for v in values)
        assert "did:local:bob" in values  # the principal the query ran for


def test_the_tree_head_is_downloaded_by_a_token_on_every_graph_only(served: Served) -> None:
    with httpx.Client(base_url=served.url) as client:
        client.post("/console/login", data={"token": TOKENS["auditor"]})
        assert "Download the tree head" in client.get("/console/verify").text
        head = client.get("/console/head")
        assert head.status_code == 200
        data = head.json()
        assert data["size"] >= 3 and len(data["hash"]) == 64  # A, B and C are sealed
        client.cookies.clear()
        client.post("/console/login", data={"token": TOKENS["bob"]})
        assert "Download the tree head" not in client.get("/console/verify").text
        assert client.get("/console/head").status_code == 404


def test_pack_results_download_as_csv_and_json_within_the_grant(served: Served) -> None:
    with httpx.Client(base_url=served.url) as client:
        client.post("/console/login", data={"token": TOKENS["bob"]})
        asked = {"name": "terminations", "run": "1"}
        csv = client.get("/console/queries", params={**asked, "format": "csv"})
        assert csv.status_code == 200 and csv.headers["content-type"].startswith("text/csv")
        assert "attachment" in csv.headers["content-disposition"]
        lines = csv.text.splitlines()
        # alice's A and C stopped too; bob reads his B's budget termination alone
        assert lines[0].startswith("session,") and len(lines) == 2
        assert lines[1].startswith(served.sessions["B"] + ",")
        data = client.get("/console/queries", params={**asked, "format": "json"}).json()
        sessions = {b["session"]["value"] for b in data["results"]["bindings"]}
        assert sessions == {served.sessions["B"]}
