#!/usr/bin/env python3
"""Profile a CSV file: encoding, delimiter, and per-column statistics."""
import csv
import sys
from collections import Counter


def sniff(path):
    raw = open(path, "rb").read(65536)
    for enc in ("utf-8-sig", "cp1252", "latin-1"):
        try:
            text = raw.decode(enc)
            break
        except UnicodeDecodeError:
            continue
    dialect = csv.Sniffer().sniff(text.splitlines()[0] if text else ",")
    return enc, dialect


def main(path):
    enc, dialect = sniff(path)
    with open(path, newline="", encoding=enc) as f:
        rows = list(csv.reader(f, dialect))
    header, body = rows[0], rows[1:]
    print(f"encoding={enc} delimiter={dialect.delimiter!r} rows={len(body)}")
    for i, name in enumerate(header):
        values = [r[i] if i < len(r) else "" for r in body]
        nulls = sum(1 for v in values if v.strip() == "")
        common = Counter(values).most_common(3)
        print(f"{name}: nulls={nulls} distinct={len(set(values))} top={common}")


if __name__ == "__main__":
    main(sys.argv[1])
