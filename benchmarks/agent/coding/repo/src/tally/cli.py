"""The ``tally`` command line: add, list and report."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from tally import storage
from tally.models import Expense
from tally.report import format_cents, summary


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tally", description="Track expenses in a CSV file.")
    sub = parser.add_subparsers(dest="command", required=True)
    add = sub.add_parser("add", help="record an expense")
    add.add_argument("day", help="date as YYYY-MM-DD")
    add.add_argument("amount", help="amount such as 12.50")
    add.add_argument("category", help="food, rent, travel, fun or other")
    add.add_argument("note", nargs="?", default="")
    listing = sub.add_parser("list", help="show the latest expenses")
    listing.add_argument("--limit", type=int, default=10, help="how many to show")
    report = sub.add_parser("report", help="totals per category")
    report.add_argument("--month", help="only this month, as YYYY-MM")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "add":
            storage.append(Expense.from_text(args.day, args.amount, args.category, args.note))
        elif args.command == "list":
            for expense in storage.load()[-args.limit :]:
                amount = format_cents(expense.amount_cents, expense.currency)
                print(f"{expense.day}  {expense.category.value:<6}  {amount:>14}  {expense.note}".rstrip())
        else:
            print(summary(storage.load(), args.month))
    except ValueError as exc:
        print(f"tally: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
