"""Random state (mx.random): seed() resets the generator that initializers and nd.random draw from."""
from ._kiln import _random_seed


def seed(seed_state, ctx="all"):
    """Reseeds Kiln's random generator (numpy-compatible legacy Mersenne Twister draws)."""
    del ctx  # one generator serves every device
    _random_seed(int(seed_state))


__all__ = ["seed"]
