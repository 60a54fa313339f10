"""The inferno command: must start fast, before any engine is configured."""

import argparse

import torch

from inferno.logger import get_logger


def main() -> None:
    parser = argparse.ArgumentParser(prog="inferno")
    parser.add_argument("--device", default="cpu")
    get_logger(__name__).info("starting on %s", parser.parse_args().device)
