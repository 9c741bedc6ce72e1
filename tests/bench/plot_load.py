#!/usr/bin/env python3
"""Draws a soak's minutes (the CSV `tests/examples/load.rs` writes) as one
PNG: continuations and reports taken per minute, pickup lag p50/p99, serve's
resident set and the database's bytes, each against time, so a reader sees
flatness (BENCHMARKS.md shows the images).

    python3 -m venv target/plot-venv
    target/plot-venv/bin/pip install -r tests/bench/requirements-plot.txt
    target/plot-venv/bin/python tests/bench/plot_load.py target/load-postgres.csv \
        docs/bench/load-postgres.png --title "PostgreSQL, 500 reports/s"
"""

import argparse
import csv

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def column(rows, name, scale=1.0):
    return [float(r[name]) * scale if r[name] else float("nan") for r in rows]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("csv")
    parser.add_argument("png")
    parser.add_argument("--title", default="")
    args = parser.parse_args()
    with open(args.csv) as f:
        rows = list(csv.DictReader(f))
    minutes = [int(r["minute"]) for r in rows]
    fig, axes = plt.subplots(4, 1, figsize=(8, 10), sharex=True)
    ax = axes[0]
    ax.plot(minutes, column(rows, "offered"), label="offered", linestyle=":")
    ax.plot(minutes, column(rows, "taken"), label="reports taken")
    ax.plot(minutes, column(rows, "continued"), label="executions continued")
    ax.set_ylabel("per minute")
    ax.set_ylim(bottom=0)
    ax.legend(loc="lower right")
    ax = axes[1]
    ax.plot(minutes, column(rows, "lag_p50_ms"), label="p50")
    ax.plot(minutes, column(rows, "lag_p99_ms"), label="p99")
    # Runs from before the column was written have none.
    if rows and "answer_p99_ms" in rows[0]:
        ax.plot(
            minutes,
            column(rows, "answer_p99_ms"),
            label="answer p99",
            linestyle="--",
        )
    ax.set_ylabel("pickup lag, answer (ms)")
    ax.set_yscale("log")
    ax.legend(loc="upper right")
    ax = axes[2]
    ax.plot(minutes, column(rows, "rss_mib"))
    ax.set_ylabel("serve RSS (MiB)")
    ax.set_ylim(bottom=0)
    ax = axes[3]
    ax.plot(minutes, column(rows, "db_mb"))
    ax.set_ylabel("database (MB)")
    ax.set_ylim(bottom=0)
    ax.set_xlabel("minute")
    fig.suptitle(args.title)
    fig.tight_layout()
    fig.savefig(args.png, dpi=80)


if __name__ == "__main__":
    main()
