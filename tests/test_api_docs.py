"""The API docs pages: console pages whose every asset is the site's own, so they work offline."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from urllib.parse import urlsplit

import pytest

pytestmark = pytest.mark.django_db

DOCS_PAGES = ("/api/docs/", "/api/redoc/")
URL_IN_TEXT = re.compile(r"""(?:https?:)?//[^\s"'<>)]+""")


class AssetLinks(HTMLParser):
    """Collects the src of every script and the href of every stylesheet or icon link."""

    def __init__(self) -> None:
        super().__init__()
        self.assets: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "script" and values.get("src"):
            self.assets.append(values["src"])
        if tag == "link" and values.get("href"):
            self.assets.append(values["href"])


def asset_links(html: str) -> list[str]:
    parser = AssetLinks()
    parser.feed(html)
    return parser.assets


@pytest.mark.parametrize("path", DOCS_PAGES)
def test_docs_page_references_no_url_outside_the_site(viewer, client, path):
    client.force_login(viewer)
    response = client.get(path)
    assert response.status_code == 200
    html = response.content.decode()
    outside = [url for url in URL_IN_TEXT.findall(html) if urlsplit(url).hostname != "testserver"]
    assert outside == [], f"{path} points outside the site, so it breaks offline: {outside}"


@pytest.mark.parametrize(
    ("path", "bundle"),
    [
        ("/api/docs/", "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js"),
        ("/api/redoc/", "/static/drf_spectacular_sidecar/redoc/bundles/redoc.standalone.js"),
    ],
)
def test_docs_page_assets_are_served_by_the_site(viewer, client, path, bundle):
    client.force_login(viewer)
    assets = asset_links(client.get(path).content.decode())
    assert bundle in assets
    for asset in assets:
        served = client.get(asset)
        assert served.status_code == 200, f"{path} loads {asset}, which the site does not serve"
        body = b"".join(served.streaming_content) if served.streaming else served.content
        assert body, f"{path} loads {asset}, which the site serves empty"


@pytest.mark.parametrize("path", DOCS_PAGES)
def test_docs_page_sits_in_the_console_navigation(viewer, client, path):
    client.force_login(viewer)
    html = client.get(path).content.decode()
    assert 'href="/environments/">Catalogue</a>' in html
    assert '<a class="active" href="/api/docs/">API</a>' in html
    assert 'data-role="viewer"' in html


@pytest.mark.parametrize("path", DOCS_PAGES)
def test_anonymous_visitor_gets_the_docs_exactly_when_they_get_the_schema(client, path):
    schema = client.get("/api/schema/")
    docs = client.get(path)
    assert docs.status_code == schema.status_code


def test_docs_pages_are_not_operations_of_the_schema(viewer, client):
    client.force_login(viewer)
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    assert not {"/api/docs/", "/api/redoc/"} & set(schema["paths"])
