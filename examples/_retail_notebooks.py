"""The retail-sales template and solution, cell by cell (stable cell ids).

The solution's code cells are plain strings so that make_examples.py can also run
them in-process (to write the hard-coded submission's literals and the answers'
numbers from the same data).
"""

from __future__ import annotations

from _nbtools import PY_KERNEL, code, md, new_notebook

INTRO = """
# Retail sales analysis

*Business Analytics with Python: homework 3 (pandas)*

You are an analyst at **Harbor Lane Outfitters**, a small outdoor-goods retailer. The
sales team exported last year's orders and wants to know where the money comes from.

Files in `data/`:

- `orders.csv`, one row per order (one product per order): order_id, date, customer_id,
  region, product_id, quantity, unit_price
- `products.csv`, one row per product: product_id, product_name, category, list_price
- `customers.csv`, one row per customer: customer_id, segment, home_region, signup_date

Work through Tasks 1 to 5 in order: write your code where it says `# YOUR CODE HERE`
and keep the variable names we ask for (they are graded). Do not edit the cells marked
*given* or the instructor's test cell. Answer the two questions in the cells that say
YOUR ANSWER HERE. Before you submit, restart the kernel and run all cells.
"""

NAME_PLACEHOLDER = "Name: YOUR NAME HERE"

SETUP = """
# Given: do not change
import matplotlib.pyplot as plt
import pandas as pd

pd.set_option("display.precision", 2)
"""

TASK1_MD = """
## Task 1: Load the data

Read `data/orders.csv`, `data/products.csv` and `data/customers.csv` into three
DataFrames named `orders`, `products` and `customers` (use relative paths as written
here). Then look at the first rows of `orders`.
"""

TASK2_MD = """
## Task 2: Clean the orders

The export is messy. Change `orders` in place (keep the name):

1. Remove exact duplicate rows (keep the first copy; do **not** reset the index).
2. Convert the `date` column from text to datetime.
3. Tidy `region`: remove surrounding spaces and write each region in title case
   (`North`, `East`, `South`, `West`).
"""

TESTS_MD = """
### Check your work

The cell below must run without errors. **Do not edit it**: the grader runs it as is.
"""

TESTS = """
# Instructor tests: do not edit this cell.
assert orders.shape[1] == 7, "orders should still have its 7 original columns"
assert len(orders) == 300, "orders should have 300 rows once duplicates are removed"
assert orders["order_id"].is_unique, "each order should appear once"
assert pd.api.types.is_datetime64_any_dtype(orders["date"]), "convert date to datetime"
assert sorted(orders["region"].unique()) == ["East", "North", "South", "West"]
print("All checks passed.")
"""

TASK3_MD = """
## Task 3: Revenue by region

Add a column `revenue` to `orders`: quantity times unit_price. Then build
`revenue_by_region`, a DataFrame with one row per region and exactly the columns
`region`, `revenue` (total revenue) and `n_orders` (number of orders), sorted by
`revenue` from highest to lowest, with a fresh index 0, 1, 2, ...
"""

TASK4_MD = """
## Task 4: Monthly trend

Build `monthly_revenue`, a DataFrame with the columns `month` (text such as
`"2024-01"`) and `revenue` (total revenue of that month): one row per month in
calendar order, index 0, 1, 2, ... The given code below your code plots it.
"""

TASK5_MD = """
## Task 5: Top products and customer segments

a. `top_products`: the 5 products with the highest total revenue, with the columns
   `product_id`, `product_name`, `category` and `revenue`, sorted by revenue (highest
   first), index 0 to 4.
b. `revenue_by_segment`: total revenue per customer `segment` (see `customers.csv`),
   with the columns `segment`, `revenue` and `share` (the segment's revenue divided by
   all revenue, rounded to 3 decimals), sorted by revenue (highest first), index 0, 1, 2.
"""

Q1 = """
### Question 1

Which region earns the most revenue, and how far ahead of the second region is it?
Give one plausible business reason, and one thing you would check in the data before
acting on it. (40-80 words)
"""

Q2 = """
### Question 2

Describe the monthly revenue trend from Task 4. Which products from Task 5 would you
put in next quarter's promotion, and why? (40-80 words)
"""

PLACEHOLDER = "YOUR ANSWER HERE"

TEMPLATE_CODE = {
    "task1": "# YOUR CODE HERE\n\n\norders.head()",
    "task2": "# YOUR CODE HERE\n",
    "task3": "# YOUR CODE HERE\n\n\nrevenue_by_region",
    "task4": """# YOUR CODE HERE


# Given: plot the trend (do not change)
ax = monthly_revenue.plot(x="month", y="revenue", marker="o", legend=False,
                          figsize=(8, 3), title="Monthly revenue, 2024")
ax.set_ylabel("Revenue ($)")
plt.show()""",
    "task5": "# YOUR CODE HERE\n\n\ndisplay(top_products)\ndisplay(revenue_by_segment)",
}

SOLUTION_CODE = {
    "task1": """
orders = pd.read_csv("data/orders.csv")
products = pd.read_csv("data/products.csv")
customers = pd.read_csv("data/customers.csv")
print(orders.shape, products.shape, customers.shape)

orders.head()""",
    "task2": """
orders = orders.drop_duplicates()
orders["date"] = pd.to_datetime(orders["date"])
orders["region"] = orders["region"].str.strip().str.title()
orders.dtypes""",
    "task3": """
orders["revenue"] = orders["quantity"] * orders["unit_price"]
revenue_by_region = (
    orders.groupby("region", as_index=False)
    .agg(revenue=("revenue", "sum"), n_orders=("order_id", "count"))
    .sort_values("revenue", ascending=False)
    .reset_index(drop=True)
)

revenue_by_region""",
    "task4": """
monthly_revenue = (
    orders.groupby(orders["date"].dt.strftime("%Y-%m"))["revenue"].sum()
    .rename_axis("month")
    .reset_index()
)
""",
    "task5": """
product_revenue = orders.groupby("product_id", as_index=False)["revenue"].sum()
top_products = (
    product_revenue.merge(products[["product_id", "product_name", "category"]],
                          on="product_id")
    .sort_values("revenue", ascending=False)
    .head(5)
    .reset_index(drop=True)
    [["product_id", "product_name", "category", "revenue"]]
)

with_segment = orders.merge(customers[["customer_id", "segment"]], on="customer_id",
                            how="left")
revenue_by_segment = (
    with_segment.groupby("segment", as_index=False)["revenue"].sum()
    .sort_values("revenue", ascending=False)
    .reset_index(drop=True)
)
revenue_by_segment["share"] = (revenue_by_segment["revenue"]
                               / revenue_by_segment["revenue"].sum()).round(3)
""",
}


def solution_source(cell_id: str) -> str:
    """The solution's full cell: its code, then what the template gives below it."""
    body = SOLUTION_CODE[cell_id].strip("\n")
    given = TEMPLATE_CODE[cell_id].split("# YOUR CODE HERE", 1)[1].strip("\n")
    if cell_id in ("task1", "task3"):  # the given last line is already in the solution
        return body
    return body + ("\n\n" + given if given else "")


def build(solution: bool, answers: tuple[str, str] = ("", "")) -> object:
    src = solution_source if solution else TEMPLATE_CODE.__getitem__
    cells = [
        md("intro", INTRO),
        md("student-name", "Name: Instructor solution" if solution else NAME_PLACEHOLDER),
        code("setup", SETUP),
        md("task1-md", TASK1_MD), code("task1", src("task1")),
        md("task2-md", TASK2_MD), code("task2", src("task2")),
        md("tests-md", TESTS_MD), code("tests", TESTS),
        md("task3-md", TASK3_MD), code("task3", src("task3")),
        md("task4-md", TASK4_MD), code("task4", src("task4")),
        md("task5-md", TASK5_MD), code("task5", src("task5")),
        md("q1", Q1), md("q1-answer", answers[0] if solution else PLACEHOLDER),
        md("q2", Q2), md("q2-answer", answers[1] if solution else PLACEHOLDER),
    ]
    return new_notebook(cells, PY_KERNEL)
