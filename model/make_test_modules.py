"""Writes the TorchScript fixtures of //model:torchscript_classifier_test.

Usage: make_test_modules.py OUT_DIR (run with the project's torch 2.11).
  good.pt           conv -> batch norm -> ReLU -> pool -> linear, 4 logits
                    on [N, 1, 8, 8]
  wrong_classes.pt  3 logits instead of 4
  reassigns.pt      reassigns a buffer in forward (self.calls = self.calls + 1)
  corrupt.pt        bytes that are no TorchScript archive
"""
import os
import sys

import torch


class Good(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 3, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(3)
        self.head = torch.nn.Linear(3 * 4 * 4, 4)

    def forward(self, x):
        x = torch.nn.functional.max_pool2d(torch.relu(self.bn(self.conv(x))), 2)
        return self.head(x.flatten(1))


class WrongClasses(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.head = torch.nn.Linear(64, 3)

    def forward(self, x):
        return self.head(x.flatten(1))


class Reassigns(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.head = torch.nn.Linear(64, 4)
        self.register_buffer("calls", torch.zeros(1))

    def forward(self, x):
        self.calls = self.calls + 1
        return self.head(x.flatten(1))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    for name, module in (("good", Good()), ("wrong_classes", WrongClasses()),
                         ("reassigns", Reassigns())):
        torch.jit.save(torch.jit.script(module), os.path.join(out, name + ".pt"))
    with open(os.path.join(out, "corrupt.pt"), "wb") as f:
        f.write(b"PK\x03\x04 this is not a TorchScript archive")


if __name__ == "__main__":
    main()
