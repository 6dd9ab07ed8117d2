#!/usr/bin/env python3
"""List, fill and flatten AcroForm fields of a PDF.

Usage:
  fill_form.py --list FORM.pdf
  fill_form.py FORM.pdf VALUES.json OUT.pdf [--flatten]
"""
import json
import sys

from pypdf import PdfReader, PdfWriter


def list_fields(path):
    for name, field in (PdfReader(path).get_fields() or {}).items():
        print(f"{name}\t{field.get('/FT')}\t{field.get('/V')}")


def fill(src, values_path, dst, flatten):
    with open(values_path) as f:
        values = json.load(f)
    writer = PdfWriter(clone_from=src)
    for page in writer.pages:
        writer.update_page_form_field_values(page, values, auto_regenerate=False)
    if flatten:
        writer.remove_annotations(subtypes="/Widget")
    with open(dst, "wb") as f:
        writer.write(f)


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--list"] and len(args) == 2:
        list_fields(args[1])
    elif len(args) in (3, 4):
        fill(args[0], args[1], args[2], args[3:] == ["--flatten"])
    else:
        sys.exit(__doc__)
