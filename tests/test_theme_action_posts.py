"""A POST to a row's own path is an action on that row, not the creation of another.

An invoicing API written for these tests, Stripe- and Google-style: `POST /invoices/{invoice}/pay`
(the name says only `Post`), `POST /v1/lists/{list}:clear` and `POST /lists/{list}/send`, next
to a true create under a parent (`POST /lists/{list}/invoices`). Before, each of them was read
from its HTTP method as "creates one invoice" and verified as such: a tool that contradicted its
document and passed. Now a transition moves the row's state and is held to that, an action no
row records is refused with what it does, and a create under a parent stays a create.
"""

from __future__ import annotations

import pytest

from environments.builder.theme_contract import run_contracts
from environments.builder.theme_data import build_theme_database
from environments.builder.theme_reading import read_theme
from environments.builder.theme_tools import implement_theme_tools
from environments.discovery.themes import parse_theme_document
from environments.runtime import SandboxPool
from tests.test_theme_contract import only
from tests.test_theme_operation_groups import answer, string_path

INVOICE = {
    "type": "object",
    "required": ["id", "number", "status", "amount", "list"],
    "properties": {
        "id": {"type": "string"},
        "number": {"type": "string"},
        "status": {"type": "string", "enum": ["draft", "open", "paid", "void"]},
        "amount": {"type": "integer", "minimum": 1},
        "list": {"type": "string"},
    },
}
LIST = {
    "type": "object",
    "required": ["id", "title"],
    "properties": {"id": {"type": "string"}, "title": {"type": "string"}},
}


def _op(operation_id: str, summary: str, params: list[str], response: str, body=None) -> dict:
    op = {
        "operationId": operation_id,
        "summary": summary,
        "parameters": [string_path(p) for p in params],
        "responses": answer({"$ref": f"#/components/schemas/{response}"}),
    }
    if body:
        op["requestBody"] = {"content": {"application/json": {"schema": body}}}
    return op


LEDGER = {
    "openapi": "3.0.3",
    "info": {"title": "Ledger invoices", "version": "1.0"},
    "paths": {
        "/v1/invoices": {
            "get": {
                "operationId": "GetInvoices",
                "summary": "List invoices",
                "responses": answer(
                    {"type": "array", "items": {"$ref": "#/components/schemas/Invoice"}}
                ),
            }
        },
        "/v1/invoices/{invoice}": {
            "get": _op("GetInvoicesInvoice", "Retrieve an invoice", ["invoice"], "Invoice")
        },
        "/v1/invoices/{invoice}/pay": {
            "post": _op("PostInvoicesInvoicePay", "Pay an invoice", ["invoice"], "Invoice")
        },
        "/v1/lists/{list}:clear": {
            "post": _op("PostListsListClear", "Clear the list", ["list"], "List")
        },
        "/v1/lists/{list}/send": {
            "post": _op("PostListsListSend", "Send the list", ["list"], "List")
        },
        "/v1/lists/{list}": {"get": _op("GetListsList", "Retrieve a list", ["list"], "List")},
        "/v1/lists/{list}/invoices": {
            "post": _op(
                "PostListsListInvoices",
                "Add an invoice to a list",
                ["list"],
                "Invoice",
                body={
                    "type": "object",
                    "required": ["number", "amount"],
                    "properties": {
                        "number": {"type": "string"},
                        "amount": {"type": "integer", "minimum": 1},
                    },
                },
            )
        },
    },
    "components": {"schemas": {"Invoice": INVOICE, "List": LIST}},
}


@pytest.fixture(scope="module")
def ledger(tmp_path_factory):
    model = read_theme(parse_theme_document(LEDGER, "ledger.json"))
    path = tmp_path_factory.mktemp("ledger") / "ledger.sqlite"
    db = build_theme_database(model, path, [], rows=8, seed="ledger")
    tools = implement_theme_tools(model, db["db_path"])
    pool = SandboxPool(workers=1)
    yield model, db["db_path"], tools, pool
    pool.close()


def plan(model, name):
    return next(p for p in model.plans if p.name == name)


def test_a_pay_post_moves_the_invoice_to_paid_and_is_held_to_that(ledger):
    model, db_path, tools, pool = ledger
    pay = plan(model, "PostInvoicesInvoicePay")
    assert (pay.operation, pay.entity, pay.rejected) == ("transition", "invoice", "")
    assert pay.options["column"] == "status" and pay.options["target"] == "paid"
    assert pay.bindings["invoice"][0] == "key"
    checked = run_contracts(only(tools, "PostInvoicesInvoicePay"), model, db_path, "l", pool)
    assert checked["PostInvoicesInvoicePay"].passed, checked["PostInvoicesInvoicePay"].summary
    assert "moves" in checked["PostInvoicesInvoicePay"].summary or "status" in (
        checked["PostInvoicesInvoicePay"].summary
    )


def test_an_action_no_row_records_is_refused_with_what_it_does(ledger):
    model, _, tools, _ = ledger
    clear = plan(model, "PostListsListClear")
    assert clear.rejected.startswith("performs the action 'clear' (POST /v1/lists/{list}:clear)")
    assert "empties what the row holds" in clear.rejected
    send = plan(model, "PostListsListSend")
    assert "performs the action 'send'" in send.rejected
    assert "sends something out of the environment" in send.rejected
    assert "PostListsListClear" not in tools.names()
    assert "PostListsListSend" not in tools.names()


def test_a_post_under_a_parent_collection_still_creates_one_row(ledger):
    model, db_path, tools, pool = ledger
    add = plan(model, "PostListsListInvoices")
    assert (add.operation, add.entity, add.rejected) == ("create", "invoice", "")
    checked = run_contracts(only(tools, "PostListsListInvoices"), model, db_path, "l", pool)
    assert checked["PostListsListInvoices"].passed, checked["PostListsListInvoices"].summary


def test_a_transition_implemented_as_a_create_is_rejected_by_its_contract(ledger):
    """The deliberately wrong reading of before: `pay` written as "adds one invoice", taking
    the same parameter and answering an invoice of the document's shape."""
    model, db_path, tools, pool = ledger
    swapped = only(tools, "PostInvoicesInvoicePay")
    swapped.functions = {
        "PostInvoicesInvoicePay": (
            "def PostInvoicesInvoicePay(db, **params):\n"
            "    row = dict(db.execute('SELECT * FROM invoices WHERE id = ?',\n"
            "                          (params['invoice'],)).fetchone())\n"
            "    row['id'] = row['id'] + '-copy'\n"
            "    row['status'] = 'paid'\n"
            "    names = ', '.join(row)\n"
            "    marks = ', '.join('?' for _ in row)\n"
            "    db.execute(f'INSERT INTO invoices ({names}) VALUES ({marks})', list(row.values()))\n"
            "    return row\n"
        )
    }
    checked = run_contracts(swapped, model, db_path, "l", pool)["PostInvoicesInvoicePay"]
    assert not checked.passed
    assert "parameters 1/1 accepted" in checked.summary
    assert "transition of one invoice expected" in checked.summary, checked.summary
