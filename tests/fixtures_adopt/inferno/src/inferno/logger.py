"""Logging for every module: imported by most of them."""

import logging


def get_logger(name: str) -> logging.Logger:
    return logging.getLogger(name)
