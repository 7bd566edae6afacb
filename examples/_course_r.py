"""Sample submissions for the two R assignments (examples/r-joins, r-strings-dates).

The template and solution are the course's own files, copied unchanged from the
seed course (MIT). Each submission starts from them and changes named cells; the
students and their written answers are invented.
"""

from __future__ import annotations

from pathlib import Path

import _nbtools as nbt

JOINS_SUMMARY = """
## Analysis Summary

### Key Findings from Join Operations:
- **Join Efficiency:** 200 of the 250 orders (80%) found their customer in the inner join;
  all 100 customers have at least one order, so the left join also has 200 rows.
- **Data Relationships:** customers to orders is one-to-many on CustomerID, orders to
  order_items is one-to-many on OrderID, and products to suppliers is many-to-one on
  Supplier_ID.
- **Multi-table Joins:** orders plus order_items gave 400 line items; adding customers
  dropped this to 310 because 90 line items belong to orders without a valid customer.
  Products and suppliers kept all 310 rows.

### Data Quality Issues Discovered:
- **Orphaned Records:** 50 orders point to a CustomerID that is not in the customer table.
- **Missing Data:** only the orders table has invalid references; every product was
  ordered at least once and every product has a supplier.
- **Referential Integrity:** no duplicate keys in any table, so the one violation is the
  50 orphaned orders.

### Business Insights:
- **Top Customer:** Customer 53 spent $8,471.51 over two orders.
- **Best Product:** Product 47 brought in $11,763.16 of revenue.
- **Regional Performance:** Chicago leads with $72,277.52 from 23 customers; Houston and
  New York have the lowest value per customer.
- **Supplier Analysis:** Supplier 5 earns the most ($43,434) from only five products,
  while Supplier 7 supplies the most products (10).

### Strategic Recommendations:
1. Add a customer-ID check when orders are entered and trace the 50 orphaned orders, which
   hide real revenue.
2. Offer a loyalty programme to the 10 customers above the 90th percentile ($4,931.51).
3. Test promotions in Houston and New York, where customers spend the least on average.
4. Find a second source for Supplier 5's products, since so much revenue depends on it.

### Technical Learnings:
- **Inner vs Left Joins:** inner joins for the metrics, where a row without a match is
  useless; left and anti joins to find what is missing.
- **Multi-table Strategy:** one join at a time, printing the row count after each step to
  see where rows disappear.
- **Performance Considerations:** the tables are small, but joining the products with
  themselves inside orders grows quickly, so I filtered to multi-item orders first.
"""

WRONG_SUMMARY = """
## Analysis Summary

### Key Findings from Join Operations:
- **Join Efficiency:** most records matched, the joins worked well.
- **Data Relationships:** the tables are linked by ID columns.
- **Multi-table Joins:** the data got bigger when we added more tables.

### Data Quality Issues Discovered:
- **Orphaned Records:** no orphaned orders were found, every order has a customer.
- **Missing Data:** nothing important was missing.
- **Referential Integrity:** fine.

### Business Insights:
- **Top Customer:** the top customer spent the most money in the table.
- **Best Product:** Product 47.
- **Regional Performance:** Chicago sells the most.
- **Supplier Analysis:** some suppliers are bigger than others.

### Strategic Recommendations:
- Focus on the best customers, sell more in Chicago, keep the data clean.
"""

REFLECTIONS = {  # strings-dates, Part 8: the complete student's own answers
    "reflection1": """
Cleaning changed the counts themselves. The categories only agree once they are trimmed
and put in one case, otherwise the same category can be counted twice. Lower-casing the
feedback before str_count() mattered most: "Excellent service" and "EXCELLENT service"
should both count as positive, and after str_to_lower() and str_squish() they do. Title
case also made product names like "samsung galaxy s23 ultra 256gb" readable in the report.
""",
    "reflection2": """
Seventeen of the 75 products mention wireless and 13 look premium, but none are gaming
products. A retailer could use these flags to build filters on the web shop, to plan a
wireless or premium campaign, and to spot gaps in the range: the missing gaming line might
be an opportunity. The flags are only as good as the product names, so a real catalogue
would need a proper attribute column.
""",
    "reflection3": """
1. Staffing: the busiest weekday (Friday here) needs more staff in stores and support.
2. Promotions: campaigns should go out just before the days and months when customers
   actually buy.
3. Inventory: monthly patterns show when to reorder so that stock arrives before the peak.

I also learned that the dates must be parsed correctly first: with mdy_hm() 61 of 150
transactions failed to parse, so these patterns only describe part of the data.
""",
    "reflection4": """
Every parsed transaction is older than 90 days, so in this data all customers are at risk.
For Recent customers I would send a thank-you and ask for a review. Moderate customers
should get product recommendations based on earlier purchases. At-risk customers need a
time-limited discount and a short survey asking why they stopped buying. I would start
with the at-risk group because it is the largest, beginning with the customers who spent
the most.
""",
    "reflection5": """
The scores point to what customers mention: service is praised, while quality control
comes up in complaints, so the product team could start there. Customer service could
follow up quickly on negative reviews. The method is crude: it misses words that are not
on the list ("poor" is not counted), ignores negation such as "not great", and cannot read
sarcasm, so I would use it for sorting reviews, not for decisions on its own.
""",
    "reflection6": """
An online shop that wants to learn why returns go up could combine both skills. String
functions would clean the return reasons and product names and pull out sizes and colours,
and date functions would measure the days between purchase and return and the weekday of
each return. Together they could show, for example, that one shoe size is returned within
a week mostly after weekend sales, which points to a sizing problem.
""",
}


def _md_from_template(nb, template, ids: list[str]) -> None:
    """Restore the template's instructions where the solution shortened them."""
    nbt.take_from(nb, template, [i for i in ids if nbt.cell(nb, i).cell_type == "markdown"])


def _answer(nb, template, cell_id: str, text: str) -> None:
    question = nbt.cell(template, cell_id).source.split("Your answer here:")[0]
    nbt.set_source(nb, cell_id, question + text.strip())


def joins(folder: Path) -> dict:
    template = nbt.load(folder / "template.ipynb", "template")
    solution = nbt.load(folder / "solution.ipynb", "solution")
    names = {"complete": "Sage Whitlock", "alternative": "Noor Halcyon",
             "partial": "Rory Quillfeather", "wrong_outputs": "Dara Pennyworth",
             "template_only": "Lux Amberly", "abs_paths": "Kit Sorrento"}

    def named(base, who):
        nb = nbt.new_notebook(base.cells, nbt.R_KERNEL)
        if any(c.id == "student-name" for c in nb.cells):
            nbt.set_source(nb, "student-name", f"Name: {names[who]}")
        else:
            nbt.insert_after(nb, "ff384b48", nbt.md("student-name", f"Name: {names[who]}"))
        return nb

    complete = named(solution, "complete")
    _md_from_template(complete, template, [c.id for c in solution.cells])
    nbt.replace(complete, "solution-2", "# Set working directory to sample_datasets folder\n"
                'setwd("/Users/humphrjk/GitHub/ai-homework-grader-clean/data")\n\n', "")
    nbt.replace(complete, "solution-2", 'read_csv("', 'read_csv("data/', count=5)
    nbt.set_source(complete, "5105da71", JOINS_SUMMARY)
    subs = {"complete": complete}

    alt = subs["alternative"] = named(complete, "alternative")  # pipes, summarize, unique()
    for cell_id, (x, y) in {"95ecc4ca": ("customers", "orders"),
                            "6f7ea95b": ("customers", "orders"),
                            "bea91837": ("customers", "orders"),
                            "3620b6da": ("customers", "orders"),
                            "0cf16593": ("orders", "order_items"),
                            "fe7095c7": ("orders_items", "customers"),
                            "999225e8": ("orders_customers_items", "products"),
                            "544f3b4e": ("complete_order_data", "suppliers")}.items():
        src = nbt.cell(alt, cell_id).source
        join = next(j for j in ("inner_join", "left_join", "right_join", "full_join")
                    if f"{j}({x}, {y}," in src)
        nbt.replace(alt, cell_id, f"{join}({x}, {y}, ", f"{x} %>% {join}({y}, ")
    nbt.replace_everywhere(alt, "summarise(", "summarize(")
    nbt.replace_everywhere(alt, "n_distinct(OrderID)", "length(unique(OrderID))")

    partial = subs["partial"] = named(complete, "partial")  # Parts 5-7 as given
    nbt.take_from(partial, template, ["e5cc6134", "8fddb9fd", "854851fe", "66eebb84",
                                      "6bdcef82", "a4677040", "52a001a5", "d3551155",
                                      "5105da71"])

    wrong = subs["wrong_outputs"] = named(complete, "wrong_outputs")
    nbt.replace(wrong, "bea91837", "<- right_join(customers", "<- left_join(customers")
    nbt.replace(wrong, "fe7095c7", "<- inner_join(orders_items, customers",
                "<- left_join(orders_items, customers")  # keeps 90 orphaned line items
    nbt.replace(wrong, "8d296273", "anti_join(orders, customers", "anti_join(customers, orders")
    nbt.replace(wrong, "e5cc6134", "Total_Spent = sum(Quantity * Unit_Price",
                "Total_Spent = sum(Unit_Price")
    nbt.replace(wrong, "6bdcef82", "Total_Spent, 0.9,", "Total_Spent, 0.5,")
    nbt.set_source(wrong, "5105da71", WRONG_SUMMARY)

    subs["template_only"] = named(template, "template_only")

    paths = subs["abs_paths"] = named(complete, "abs_paths")  # a Codespaces path
    nbt.replace(paths, "solution-2", 'read_csv("data/',
                'read_csv("/workspaces/joins-student042/data/', count=5)
    return subs


def strings_dates(folder: Path) -> dict:
    template = nbt.load(folder / "template.ipynb", "template")
    solution = nbt.load(folder / "solution.ipynb", "solution")
    names = {"complete": "Ames Calloway", "partial": "Bex Tremaine",
             "wrong_outputs": "Cato Wilder", "template_only": "Fern Oakhurst",
             "abs_paths": "Gale Ransome"}

    def named(base, who, number):
        nb = nbt.new_notebook(base.cells, nbt.R_KERNEL)
        nbt.take_from(nb, template, ["header"])
        nbt.replace(nb, "header", "[Enter Your Full Name Here]", names[who])
        nbt.replace(nb, "header", "[Enter Your Student ID]", f"S-{number:05d}")
        nbt.replace(nb, "header", "[Enter Today's Date]", "March 14, 2025")
        return nb

    complete = named(solution, "complete", 101)
    nbt.replace(complete, "setup",
                "setwd('/Users/humphrjk/GitHub/ai-homework-grader-clean/data/processed')\n", "")
    nbt.replace(complete, "import_data", 'read_csv("', 'read_csv("data/', count=3)
    for cell_id, text in REFLECTIONS.items():
        _answer(complete, template, cell_id, text)
    subs = {"complete": complete}

    partial = subs["partial"] = named(complete, "partial", 102)  # Parts 5-7 and 8.3-8.6 as given
    nbt.take_from(partial, template, ["calculate_recency", "recency_categories",
                                      "extract_names", "weekday_analysis", "monthly_analysis",
                                      "business_summary", "top_products", "reflection3",
                                      "reflection4", "reflection5", "reflection6"])

    wrong = subs["wrong_outputs"] = named(complete, "wrong_outputs", 103)
    nbt.replace(wrong, "clean_categories", "str_to_title(str_trim(Category))",
                "str_to_upper(str_trim(Category))")
    nbt.replace(wrong, "sentiment_analysis", "sentiment_score = positive_words - negative_words",
                "sentiment_score = positive_words + negative_words")
    nbt.replace(wrong, "weekend_flag", "wday(date_parsed) %in% c(1, 7)",
                "wday(date_parsed) %in% c(6, 7)")
    nbt.replace(wrong, "weekday_analysis", "arrange(desc(transaction_count))",
                "arrange(transaction_count)")
    nbt.replace(wrong, "top_products", "head(5)", "head(3)")

    subs["template_only"] = named(template, "template_only", 104)

    paths = subs["abs_paths"] = named(complete, "abs_paths", 105)
    nbt.replace(paths, "import_data", 'read_csv("data/',
                'read_csv("/workspaces/strings-dates-student042/data/', count=3)
    return subs
