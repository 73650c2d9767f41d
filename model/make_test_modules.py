"""Writes the TorchScript fixtures of //model:torchscript_classifier_test.

Usage: make_test_modules.py OUT_DIR (run with the project's torch 2.11).
  good.pt           conv -> batch norm -> ReLU -> pool -> linear, 4 logits
                    on [N, 1, 8, 8]
  wrong_classes.pt  3 logits instead of 4
  reassigns.pt      reassigns a buffer in forward (self.calls = self.calls + 1)
  layers.pt         for the layer audit: batch norm in training mode, reached
                    through two attributes, a frozen batch norm (eval mode),
                    nn.Dropout(0.5), nn.Dropout(p=0.0)
  takes_keys.pt     forward(images, keys: Tensor): the logits plus keys % 2
  wrong_keys.pt     forward(images, scale: float)
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


class Layers(torch.nn.Module):
    def __init__(self):
        super().__init__()
        frozen = torch.nn.BatchNorm2d(3)
        frozen.eval()
        self.features = torch.nn.Sequential(
            torch.nn.Conv2d(1, 3, 3, padding=1), torch.nn.BatchNorm2d(3), frozen,
            torch.nn.ReLU())
        self.norm_again = self.features[1]
        self.drop = torch.nn.Dropout(0.5)
        self.no_drop = torch.nn.Dropout(p=0.0)
        self.head = torch.nn.Linear(3 * 8 * 8, 4)

    def forward(self, x):
        x = self.norm_again(self.features(x)).flatten(1)
        return self.head(self.no_drop(self.drop(x)))


class TakesKeys(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.head = torch.nn.Linear(64, 4)

    def forward(self, x, keys: torch.Tensor):
        return self.head(x.flatten(1)) + (keys % 2).to(torch.float32).unsqueeze(1)


class WrongKeys(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.head = torch.nn.Linear(64, 4)

    def forward(self, x, scale: float):
        return self.head(x.flatten(1)) * scale


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    for name, module in (("good", Good()), ("wrong_classes", WrongClasses()),
                         ("reassigns", Reassigns()), ("layers", Layers()),
                         ("takes_keys", TakesKeys()), ("wrong_keys", WrongKeys())):
        torch.jit.save(torch.jit.script(module), os.path.join(out, name + ".pt"))
    with open(os.path.join(out, "corrupt.pt"), "wb") as f:
        f.write(b"PK\x03\x04 this is not a TorchScript archive")


if __name__ == "__main__":
    main()
