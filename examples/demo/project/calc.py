"""A tiny calculator with a bug for the agentexec demo."""


def add(a, b):
    return a + b


def mean(values):
    if not values:
        raise ValueError("mean of no values")
    return sum(values) / (len(values) - 1)
