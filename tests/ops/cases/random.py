"""numpy cases for the random ops whose draws are certain: a uniform range of one point, a normal of
scale 0, Bernoulli probabilities of 0 and 1, Multinomial rows with one possible class, Poisson and
negative binomial draws of mean 0, an exponential of infinite rate, randint over one integer, and
Gamma(1e6, 1e-6), whose draws lie within 1% of 1 (six standard deviations). Their distributions are
checked by tests/python/test_mxnet_random.py and test_random_models.py."""

import numpy as np
from casefile import write_case


def full(shape, value, dtype=np.float32):
    return np.full(shape, value, dtype=dtype)


def write(root):
    write_case(root, "random_uniform_one_point", "RandomUniform", [], [full((2, 3), 2.5)],
               attrs={"shape": [2, 3], "low": 2.5, "high": 2.5})
    write_case(root, "random_uniform_one_point_float64", "RandomUniform", [], [full((4,), -1.0, np.float64)],
               attrs={"shape": [4], "low": -1.0, "high": -1.0, "dtype": 11, "seed": 5.0})
    write_case(root, "random_uniform_like_one_point", "RandomUniformLike", [np.zeros((3, 2))],
               [full((3, 2), 0.5, np.float64)], attrs={"low": 0.5, "high": 0.5})
    write_case(root, "random_normal_scale_0", "RandomNormal", [], [full((5,), 4.0)],
               attrs={"shape": [5], "mean": 4.0, "scale": 0.0})
    write_case(root, "random_normal_like_scale_0", "RandomNormalLike", [np.zeros(4, np.float32)],
               [full((4,), -2.0, np.float64)], attrs={"mean": -2.0, "scale": 0.0, "dtype": 11})
    p = np.array([0, 1, 1, 0, 1], np.float32)
    write_case(root, "bernoulli_certain", "Bernoulli", [p], [p])
    write_case(root, "bernoulli_certain_bool", "Bernoulli", [p.astype(np.float64)], [p.astype(bool)],
               attrs={"dtype": 9})
    logits = np.array([[0, -np.inf, -np.inf], [-np.inf, -np.inf, 3]], np.float32)
    write_case(root, "multinomial_one_class", "Multinomial", [logits],
               [np.array([[0] * 4, [2] * 4], np.int32)], attrs={"sample_size": 4})
    write_case(root, "multinomial_one_class_int64", "Multinomial", [logits],
               [np.array([[0], [2]], np.int64)], attrs={"dtype": 7})
    write_case(root, "sample_uniform_one_point", "SampleUniform",
               [np.array([1, 2], np.float32), np.array([1, 2], np.float32)],
               [np.array([[1] * 3, [2] * 3], np.float32)], attrs={"shape": [3]})
    write_case(root, "sample_normal_sigma_0", "SampleNormal", [np.array(5.0), np.array(0.0)], [full((2,), 5.0)],
               attrs={"shape": [2]})
    write_case(root, "sample_gamma_narrow", "SampleGamma", [np.array(1e6), np.array(1e-6)], [full((64,), 1.0)],
               attrs={"shape": [64]}, rtol=0.01, atol=0)
    write_case(root, "sample_exponential_infinite_rate", "SampleExponential", [np.array([np.inf, np.inf])],
               [full((2, 3), 0.0)], attrs={"shape": [3]})
    write_case(root, "sample_poisson_mean_0", "SamplePoisson", [np.zeros(2, np.float32)],
               [full((2, 3), 0.0, np.float64)], attrs={"shape": [3], "dtype": 11})
    write_case(root, "sample_negative_binomial_certain_success", "SampleNegativeBinomial",
               [np.array(3.0), np.array(1.0)], [full((4,), 0.0)], attrs={"shape": [4]})
    write_case(root, "sample_generalized_negative_binomial_mean_0", "SampleGeneralizedNegativeBinomial",
               [np.array(0.0), np.array(0.5)], [np.zeros(3, np.int32)], attrs={"shape": [3], "dtype": 6})
    write_case(root, "sample_randint_one_integer", "SampleRandint", [], [np.full(4, 7, np.int32)],
               attrs={"shape": [4], "low": 7, "high": 8})
    write_case(root, "sample_randint_one_integer_int64", "SampleRandint", [], [np.full((2, 2), -3, np.int64)],
               attrs={"shape": [2, 2], "low": -3, "high": -2, "dtype": 7})
