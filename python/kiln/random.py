"""Random numbers (mx.random): seed() resets the seeds of every random op and the generator Gluon's
initializers draw from; the distributions are mx.nd.random's."""
from ._kiln import _random_seed
from .ndarray.random import (uniform, normal, randn, gamma, exponential, poisson, negative_binomial,
                             generalized_negative_binomial, randint, multinomial, shuffle)


def seed(seed_state, ctx="all"):
    """Reseeds Kiln's random generators: the same seed, the same draws in the same program. Kiln has
    one generator for every device, so `ctx` ("all" or a context) reseeds it either way."""
    _random_seed(int(seed_state))


__all__ = ["seed", "uniform", "normal", "randn", "gamma", "exponential", "poisson", "negative_binomial",
           "generalized_negative_binomial", "randint", "multinomial", "shuffle"]
