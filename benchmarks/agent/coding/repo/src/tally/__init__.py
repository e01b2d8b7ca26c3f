"""tally: a small command-line expense tracker."""

from tally.models import Category, Expense
from tally.report import monthly_totals, total_by_category

__version__ = "0.3.0"
__all__ = ["Category", "Expense", "monthly_totals", "total_by_category"]
