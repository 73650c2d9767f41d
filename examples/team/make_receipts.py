#!/usr/bin/python3
"""Writes the team folder's own receipts: receipts/receipts.csv and
receipts/images/*.pgm (ASCII PGM, 16 x 16), 12 receipts of each label,
drawn from a fixed seed so the files are the same every time. Run from
this folder to make them again: python3 make_receipts.py

Each label has a look of its own: `ok` dark text lines on white,
`blurred` the same lines smeared, `faded` them at low contrast, `cropped`
with the right part cut to black.
"""
import os
import random

SIZE = 16
LABELS = ("ok", "blurred", "faded", "cropped")
PER_LABEL = 12


def receipt(label, rng):
  rows = []
  for y in range(SIZE):
    line = y % 4 == 1 or y % 4 == 2
    row = []
    for x in range(SIZE):
      ink = line and 2 <= x < SIZE - 2 - rng.randrange(4)
      value = 40 if ink else 230
      if label == "blurred":
        value = 150 if line else 200
      elif label == "faded":
        value = 170 if ink else 215
      elif label == "cropped" and x >= SIZE - 5:
        value = 0
      row.append(max(0, min(255, value + rng.randrange(-12, 13))))
    rows.append(row)
  return rows


def main():
  rng = random.Random(20261206)
  os.makedirs("receipts/images", exist_ok=True)
  lines = ["receipt_id,image,label"]
  for n in range(PER_LABEL):
    for label in LABELS:
      receipt_id = "team-%s-%02d" % (label, n)
      image = "images/%s.pgm" % receipt_id
      with open(os.path.join("receipts", image), "w") as f:
        f.write("P2\n%d %d\n255\n" % (SIZE, SIZE))
        for row in receipt(label, rng):
          f.write(" ".join(str(v) for v in row) + "\n")
      lines.append("%s,%s,%s" % (receipt_id, image, label))
  with open("receipts/receipts.csv", "w") as f:
    f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
  main()
