"""Programmatic-task sources over the sample bookstore, shared by the synthesis and audit tests."""

HERBERT_TOTAL = """
def solve(call):
    total = 0
    for book in call("list_books_by_author", author_name="Frank Herbert"):
        total += call("get_book", book_id=book["id"])["price"]
    return round(total, 2)
"""

CHECK_TOTAL = """
import json


def verify(answer, call):
    books = call("list_books_by_author", author_name="Frank Herbert")
    return abs(answer - sum(call("get_book", book_id=b["id"])["price"] for b in books)) < 0.01
"""

ACCEPT_ANYTHING = """
def verify(answer, call):
    return True
"""
