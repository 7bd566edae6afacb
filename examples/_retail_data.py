"""Synthetic data for examples/retail-sales: a small outdoor-goods shop, 2024.

Deterministic (fixed seed). The orders file carries three kinds of mess that
Task 2 asks students to clean: exact duplicate rows (a double export), region
labels with stray spaces and odd case, and dates stored as text.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

SEED = 20240917
N_ORDERS = 300
N_DUPLICATES = 6
N_CUSTOMERS = 60

PRODUCTS = [  # product_id, product_name, category, list price
    ("P01", "Trail Backpack", "Bags", 89.00),
    ("P02", "Day Pack", "Bags", 49.50),
    ("P03", "Rain Jacket", "Apparel", 129.00),
    ("P04", "Fleece Pullover", "Apparel", 64.00),
    ("P05", "Merino Socks 3-Pack", "Accessories", 24.00),
    ("P06", "Hiking Boots", "Footwear", 159.00),
    ("P07", "Trail Runners", "Footwear", 119.00),
    ("P08", "Water Bottle", "Accessories", 18.50),
    ("P09", "Headlamp", "Accessories", 34.00),
    ("P10", "Camp Mug", "Accessories", 12.00),
    ("P11", "Insulated Vest", "Apparel", 98.00),
    ("P12", "Duffel Bag", "Bags", 75.00),
]
PRODUCT_WEIGHTS = [8, 10, 7, 9, 12, 5, 6, 11, 9, 10, 5, 8]
REGIONS = ["North", "East", "South", "West"]
REGION_WEIGHTS = [0.34, 0.27, 0.22, 0.17]
SEGMENTS = ["Consumer", "Small Business", "Corporate"]
SEGMENT_WEIGHTS = [0.6, 0.25, 0.15]
MONTH_WEIGHTS = [6, 5, 7, 7, 8, 8, 7, 8, 8, 10, 12, 14]  # busier towards the holidays
MESSY = {"North": [" North", "north", "NORTH "], "East": ["East ", "east"],
         "South": ["south", " South "], "West": ["West ", "WEST"]}


def build(rng: np.random.Generator) -> dict[str, pd.DataFrame]:
    products = pd.DataFrame(PRODUCTS, columns=["product_id", "product_name", "category",
                                               "list_price"])

    cust_ids = [f"C{i:03d}" for i in range(1, N_CUSTOMERS + 1)]
    home = rng.choice(REGIONS, size=N_CUSTOMERS, p=REGION_WEIGHTS)
    signup = pd.Timestamp("2021-01-01") + pd.to_timedelta(
        rng.integers(0, 3 * 365, size=N_CUSTOMERS), unit="D")
    customers = pd.DataFrame({
        "customer_id": cust_ids,
        "segment": rng.choice(SEGMENTS, size=N_CUSTOMERS, p=SEGMENT_WEIGHTS),
        "home_region": home,
        "signup_date": signup.strftime("%Y-%m-%d"),
    })

    months = rng.choice(np.arange(1, 13), size=N_ORDERS, p=np.divide(MONTH_WEIGHTS,
                                                                     sum(MONTH_WEIGHTS)))
    days = [int(rng.integers(1, pd.Timestamp(2024, m, 1).days_in_month + 1)) for m in months]
    dates = sorted(pd.Timestamp(2024, int(m), d) for m, d in zip(months, days, strict=True))
    cust = rng.choice(N_CUSTOMERS, size=N_ORDERS)
    prod = rng.choice(len(PRODUCTS), size=N_ORDERS,
                      p=np.divide(PRODUCT_WEIGHTS, sum(PRODUCT_WEIGHTS)))
    quantity = rng.choice([1, 1, 1, 2, 2, 3, 4, 5], size=N_ORDERS)
    discount = rng.random(N_ORDERS) < 0.15
    price = [round(PRODUCTS[p][3] * (0.9 if d else 1.0), 2)
             for p, d in zip(prod, discount, strict=True)]
    regions = [home[c] for c in cust]
    messy = rng.random(N_ORDERS) < 0.1
    regions = [str(rng.choice(MESSY[r])) if m else r
               for r, m in zip(regions, messy, strict=True)]
    orders = pd.DataFrame({
        "order_id": np.arange(1001, 1001 + N_ORDERS),
        "date": [d.strftime("%Y-%m-%d") for d in dates],
        "customer_id": [cust_ids[c] for c in cust],
        "region": regions,
        "product_id": [PRODUCTS[p][0] for p in prod],
        "quantity": quantity,
        "unit_price": price,
    })
    dup = np.sort(rng.choice(N_ORDERS, size=N_DUPLICATES, replace=False))
    pieces, start = [], 0
    for i in dup:  # each duplicate right after its original, as a double export would
        pieces += [orders.iloc[start:i + 1], orders.iloc[[i]]]
        start = i + 1
    pieces.append(orders.iloc[start:])
    orders = pd.concat(pieces, ignore_index=True)
    return {"orders": orders, "products": products, "customers": customers}


def write(data_dir: Path) -> None:
    data_dir.mkdir(parents=True, exist_ok=True)
    for name, df in build(np.random.default_rng(SEED)).items():
        df.to_csv(data_dir / f"{name}.csv", index=False, lineterminator="\n")
