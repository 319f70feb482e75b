import pytest

pytestmark = pytest.mark.integration


def test_the_page_and_its_static_files_are_served(api) -> None:
    r = api.get("/")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert 'id="z-slider"' in r.text and "/static/app.js" in r.text
    js = api.get("/static/app.js")
    assert js.status_code == 200 and js.headers["content-type"].startswith("text/javascript")
    assert "/v1/recall" in js.text
    assert api.get("/static/app.css").headers["content-type"].startswith("text/css")
    for bad in ("/static/nope.js", "/static/..%2Fgraph.py", "/static/%2e%2e%2fapi%2fapp.py"):
        assert api.get(bad).status_code == 404, bad
