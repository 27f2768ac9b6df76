"""Small OpenAPI and Swagger documents written for the robustness tests: each holds one kind of
thing real documents do that once crashed a theme build (used by tests/test_openapi_robustness.py)."""

from __future__ import annotations

import copy


def _book_paths(ref: str) -> dict:
    """A little book shop: list, get, create, update and delete books."""
    return {
        "/books": {
            "get": {
                "operationId": "listBooks",
                "summary": "List books",
                "parameters": [
                    {"name": "genre", "in": "query", "schema": {"type": "string"}},
                    {"name": "limit", "in": "query", "schema": {"type": "integer"}},
                ],
                "responses": {"200": {"description": "ok"}},
            },
            "post": {
                "operationId": "createBook",
                "summary": "Create a book",
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": {"$ref": ref}}},
                },
                "responses": {"201": {"description": "created"}},
            },
        },
        "/books/{bookId}": {
            "parameters": [
                {"name": "bookId", "in": "path", "required": True, "schema": {"type": "integer"}}
            ],
            "get": {
                "operationId": "getBook",
                "summary": "Get a book",
                "responses": {"200": {"description": "ok"}},
            },
            "delete": {
                "operationId": "deleteBook",
                "summary": "Delete a book",
                "responses": {"204": {"description": "gone"}},
            },
        },
    }


BOOK = {
    "type": "object",
    "required": ["title"],
    "properties": {
        "bookId": {"type": "integer", "format": "int64"},
        "title": {"type": "string"},
        "genre": {"type": "string", "enum": ["novel", "poetry", "essay"]},
        "pages": {"type": "integer", "minimum": 1, "maximum": 2000},
    },
}

OPENAPI_30 = {
    "openapi": "3.0.3",
    "info": {"title": "Book Shop", "version": "1.0.0"},
    "servers": [{"url": "https://books.example.org/v1"}],
    "paths": _book_paths("#/components/schemas/Book"),
    "components": {"schemas": {"Book": BOOK}},
}

OPENAPI_31 = copy.deepcopy(OPENAPI_30)
OPENAPI_31["openapi"] = "3.1.0"
OPENAPI_31["components"]["schemas"]["Book"]["properties"].update(
    {
        "subtitle": {"type": ["string", "null"], "examples": ["A subtitle"]},
        "format": {"const": "paper"},
        "isbn": {"type": "string", "pattern": "^[0-9-]{10,17}$", "examples": ["978-0-00"]},
    }
)

SWAGGER_20 = {
    "swagger": "2.0",
    "info": {"title": "Book Shop", "version": "1.0.0"},
    "host": "books.example.org",
    "basePath": "/v1",
    "schemes": ["https"],
    "paths": {
        "/books": {
            "get": {
                "operationId": "listBooks",
                "summary": "List books",
                "parameters": [
                    {"name": "genre", "in": "query", "type": "string"},
                    {"name": "limit", "in": "query", "type": "integer"},
                ],
                "responses": {"200": {"description": "ok"}},
            },
            "post": {
                "operationId": "createBook",
                "summary": "Create a book",
                "parameters": [
                    {
                        "name": "book",
                        "in": "body",
                        "required": True,
                        "schema": {"$ref": "#/definitions/Book"},
                    }
                ],
                "responses": {"201": {"description": "created"}},
            },
        },
        "/books/{bookId}": {
            "parameters": [{"$ref": "#/parameters/BookId"}],
            "get": {
                "operationId": "getBook",
                "summary": "Get a book",
                "responses": {"200": {"description": "ok"}},
            },
            "delete": {
                "operationId": "deleteBook",
                "summary": "Delete a book",
                "responses": {"204": {"description": "gone"}},
            },
        },
    },
    "parameters": {"BookId": {"name": "bookId", "in": "path", "required": True, "type": "integer"}},
    "definitions": {"Book": BOOK},
}


def hard_document() -> dict:
    """Every trap at once: dotted and slashed operationIds, a path `name` meeting a body `Name`,
    a recursive schema, an ECMA-only pattern, an entity without an id, int64-breaking bounds,
    `allOf` and references to shared parameters, responses and request bodies."""
    folder = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "label": {"type": "string"},
            "parent": {"$ref": "#/components/schemas/Folder"},
            "children": {"type": "array", "items": {"$ref": "#/components/schemas/Folder"}},
        },
    }
    return {
        "openapi": "3.0.1",
        "info": {"title": "Archive", "version": "2.1"},
        "servers": [{"url": "https://archive.example.com/api"}],
        "paths": {
            "/folders": {
                "get": {
                    "operationId": "folders.list",
                    "summary": "List folders",
                    "parameters": [{"$ref": "#/components/parameters/Limit"}],
                    "responses": {"200": {"$ref": "#/components/responses/Folders"}},
                },
                "post": {
                    "operationId": "folders/create",
                    "summary": "Create a folder",
                    "requestBody": {"$ref": "#/components/requestBodies/NewFolder"},
                    "responses": {"201": {"description": "created"}},
                },
            },
            "/folders/{name}": {
                "parameters": [
                    {"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}
                ],
                "get": {
                    "operationId": "folders/get-folder",
                    "summary": "Get a folder",
                    "responses": {"200": {"description": "ok"}},
                },
                "put": {
                    "operationId": "folders.update",
                    "summary": "Update a folder",
                    "requestBody": {
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "properties": {
                                        "Name": {"type": "string"},
                                        "label": {"type": "string", "pattern": "^\\p{L}+$"},
                                    },
                                }
                            }
                        }
                    },
                    "responses": {"200": {"description": "ok"}},
                },
            },
            "/counters": {
                "get": {
                    "operationId": "counters.list",
                    "summary": "List counters",
                    "parameters": [
                        {"name": "kind", "in": "query", "schema": {"type": "string"}},
                    ],
                    "responses": {"200": {"description": "ok"}},
                },
                "post": {
                    "operationId": "counters/create",
                    "summary": "Create a counter",
                    "requestBody": {
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/Counter"}}
                        }
                    },
                    "responses": {"201": {"description": "created"}},
                },
            },
        },
        "components": {
            "schemas": {
                "Folder": folder,
                "Counter": {
                    "allOf": [
                        {
                            "type": "object",
                            "properties": {
                                "kind": {"type": "string", "enum": ["hits", "misses"]},
                                "value": {
                                    "type": "integer",
                                    "format": "int64",
                                    "minimum": -9223372036854775808,
                                    "maximum": 1e30,
                                    "example": 9223372036854775807,
                                },
                            },
                        },
                        {"type": "object", "properties": {"note": {"type": "string"}}},
                    ]
                },
            },
            "parameters": {
                "Limit": {"name": "limit", "in": "query", "schema": {"type": "integer"}}
            },
            "responses": {
                "Folders": {
                    "description": "folders",
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "array",
                                "items": {"$ref": "#/components/schemas/Folder"},
                            }
                        }
                    },
                }
            },
            "requestBodies": {
                "NewFolder": {
                    "required": True,
                    "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/Folder"}}
                    },
                }
            },
        },
    }


def same_title_other_host() -> dict:
    """Another API that happens to be titled "Book Shop" too, served elsewhere."""
    doc = copy.deepcopy(OPENAPI_30)
    doc["servers"] = [{"url": "https://api.other-books.test/"}]
    return doc
