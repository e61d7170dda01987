"""Bad input fails early with a ValueError/TypeError that names the argument.

Every ``match=`` below anchors on the argument's name (``^q has ...``), so a
message that blames the wrong argument, or a crash from deep inside numpy,
makes the test fail.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from attention_lib import project_qkv, scaled_dot_product_attention, softmax

N_Q, N_K, D_K, D_V = 3, 4, 2, 5
NAMES = ["q", "k", "v"]


def good_inputs():
    """Valid q (3, 2), k (4, 2), v (4, 5), by argument name."""
    rng = np.random.default_rng(0)
    return {
        "q": rng.normal(size=(N_Q, D_K)),
        "k": rng.normal(size=(N_K, D_K)),
        "v": rng.normal(size=(N_K, D_V)),
    }


def attend_with(name, value, **kwargs):
    """Call attention with one of q, k, v replaced by ``value``."""
    args = good_inputs()
    args[name] = value
    return scaled_dot_product_attention(args["q"], args["k"], args["v"], **kwargs)


def test_good_inputs_are_good():
    out, w = attend_with("q", good_inputs()["q"])
    assert out.shape == (N_Q, D_V)
    assert w.shape == (N_Q, N_K)


# --------------------------------------------------------------------------------------
# q, k, v: dimensions and shapes
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_one_dimensional_argument(name):
    value = good_inputs()[name][0]  # a single row, shape (d,)
    with pytest.raises(ValueError, match=rf"^{name} has 1 dimension\(s\) \(shape \(\d+,\)"):
        attend_with(name, value)


@pytest.mark.parametrize("name", NAMES)
def test_scalar_argument(name):
    with pytest.raises(ValueError, match=rf"^{name} has 0 dimension\(s\)"):
        attend_with(name, 1.0)


def test_mismatched_d_k_between_q_and_k():
    with pytest.raises(ValueError, match=r"^q has d_k=2 \(shape \(3, 2\).* but k has d_k=3"):
        attend_with("k", np.ones((N_K, 3)))


def test_mismatched_n_k_between_k_and_v():
    with pytest.raises(ValueError, match=r"^k has n_k=4 positions .* but v has 6"):
        attend_with("v", np.ones((6, D_V)))


def test_leading_axes_that_do_not_broadcast():
    q, k, v = np.ones((2, N_Q, D_K)), np.ones((3, N_K, D_K)), np.ones((N_K, D_V))
    with pytest.raises(ValueError, match=r"leading \(batch, head\) axes do not broadcast: "
                                         r"q \(2,\), k \(3,\), v \(\)"):
        scaled_dot_product_attention(q, k, v)


def test_leading_axes_of_v_that_do_not_broadcast():
    q, k, v = np.ones((2, 4, N_Q, D_K)), np.ones((4, N_K, D_K)), np.ones((3, N_K, D_V))
    with pytest.raises(ValueError, match=r"do not broadcast: q \(2, 4\), k \(4,\), v \(3,\)"):
        scaled_dot_product_attention(q, k, v)


@pytest.mark.parametrize(
    ("name", "shape"),
    [
        ("q", (0, D_K)),
        ("q", (2, 0, D_K)),
        ("k", (0, D_K)),
        ("v", (N_K, 0)),
        ("v", (0, N_K, D_V)),
    ],
)
def test_zero_length_axis(name, shape):
    pattern = "^" + re.escape(f"{name} has an empty axis (shape {shape}")
    with pytest.raises(ValueError, match=pattern):
        attend_with(name, np.ones(shape))


def test_zero_length_d_k_in_both_q_and_k():
    q, k, v = np.ones((N_Q, 0)), np.ones((N_K, 0)), np.ones((N_K, D_V))
    with pytest.raises(ValueError, match=r"^q has an empty axis"):
        scaled_dot_product_attention(q, k, v)


def test_ragged_nested_list():
    with pytest.raises(ValueError, match=r"^q could not be turned into an array"):
        attend_with("q", [[1.0, 2.0], [3.0]])


# --------------------------------------------------------------------------------------
# q, k, v: values and dtypes
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf], ids=["nan", "inf", "-inf"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nan_or_inf(name, bad, dtype):
    value = good_inputs()[name].astype(dtype)
    value[1, 1] = bad
    with pytest.raises(ValueError, match=rf"^{name} contains 1 NaN or infinite value\(s\), "
                                         r"the first at index \(1, 1\)"):
        attend_with(name, value)


@pytest.mark.parametrize("name", NAMES)
def test_nan_in_a_batch(name):
    value = np.broadcast_to(good_inputs()[name], (2, 3, *good_inputs()[name].shape)).copy()
    value[1, 2, 0, 0] = np.nan
    value[0, 0, 0, 1] = np.inf
    with pytest.raises(ValueError, match=rf"^{name} contains 2 NaN or infinite .* \(0, 0, 0, 1\)"):
        attend_with(name, value)


@pytest.mark.parametrize("name", NAMES)
def test_complex(name):
    value = good_inputs()[name] + 0j
    with pytest.raises(TypeError, match=rf"^{name} has complex dtype complex128"):
        attend_with(name, value)


@pytest.mark.parametrize("name", NAMES)
def test_strings(name):
    value = np.full(good_inputs()[name].shape, "0.5")
    with pytest.raises(TypeError, match=rf"^{name} has dtype <U3; expected an array of real"):
        attend_with(name, value)


@pytest.mark.parametrize("name", NAMES)
def test_object_array(name):
    value = good_inputs()[name].astype(object)
    with pytest.raises(TypeError, match=rf"^{name} has dtype object; expected an array of real"):
        attend_with(name, value)


@pytest.mark.parametrize("name", NAMES)
def test_boolean_array(name):
    value = good_inputs()[name] > 0
    with pytest.raises(TypeError, match=rf"^{name} has dtype bool; expected real numbers"):
        attend_with(name, value)


@pytest.mark.parametrize("name", NAMES)
def test_none(name):
    with pytest.raises(TypeError, match=rf"^{name} is None"):
        attend_with(name, None)


def test_scores_that_overflow_are_reported_in_terms_of_the_arguments():
    # Finite inputs whose scores q . k / sqrt(d_k) overflow float64 (1e200 * 1e200).
    # Acceptable: the right answer (all weight on key 0), or a ValueError that talks
    # about the scores/overflow or names q and k, never one about an argument "x"
    # that the caller did not pass.
    q = np.array([[1e200]])
    k = np.array([[1e200], [1.0]])
    v = np.array([[1.0], [2.0]])
    try:
        out, w = scaled_dot_product_attention(q, k, v)
    except ValueError as exc:
        message = str(exc)
        assert not message.startswith("x "), message
        assert any(word in message for word in ("overflow", "scores", "q and k")), message
    else:
        np.testing.assert_allclose(w, [[1.0, 0.0]])
        np.testing.assert_allclose(out, [[1.0]])


# --------------------------------------------------------------------------------------
# mask, causal, fully_masked
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(N_Q, N_K + 1), (N_Q + 1, N_K), (2, N_Q, N_K, 3), (N_K, N_Q)])
def test_mask_of_the_wrong_shape(shape):
    mask = np.ones(shape, dtype=bool)
    pattern = "^" + re.escape(f"mask has shape {shape}, dtype bool; expected a shape "
                              "broadcastable to the scores (..., n_q, n_k) = (3, 4)")
    with pytest.raises(ValueError, match=pattern):
        attend_with("q", good_inputs()["q"], mask=mask)


@pytest.mark.parametrize(
    ("mask", "dtype_name"),
    [
        (np.ones((N_Q, N_K)), "float64"),
        (np.ones((N_Q, N_K), dtype=np.float32), "float32"),
        (np.ones((N_Q, N_K), dtype=np.int64), "int64"),
        (np.ones((N_Q, N_K), dtype=np.uint8), "uint8"),
        (np.where(np.eye(N_Q, N_K) > 0, 0.0, -np.inf), "float64"),  # additive mask
        ([[1, 0, 1, 1]] * N_Q, "int64"),
    ],
)
def test_mask_of_the_wrong_dtype(mask, dtype_name):
    with pytest.raises(TypeError, match=rf"^mask has dtype {dtype_name}; expected a boolean"):
        attend_with("q", good_inputs()["q"], mask=mask)


def test_causal_with_more_queries_than_keys():
    q, k, v = np.ones((3, D_K)), np.ones((2, D_K)), np.ones((2, D_V))
    with pytest.raises(ValueError, match=r"n_q=3 queries and n_k=2 keys.*no key to attend to"):
        scaled_dot_product_attention(q, k, v, causal=True)


def test_causal_and_mask_leave_a_query_with_no_key():
    q, k, v = np.ones((3, D_K)), np.ones((3, D_K)), np.ones((3, D_V))
    mask = np.array([False, True, True])  # query 0 may only see key 0, which is masked
    with pytest.raises(ValueError, match=r"1 query row\(s\) with no key to attend to.*\(0,\)"):
        scaled_dot_product_attention(q, k, v, mask, causal=True)


@pytest.mark.parametrize("causal", [1, 0, "yes", None, np.array([True, False])])
def test_causal_must_be_a_bool(causal):
    with pytest.raises(TypeError, match=r"^causal=.*; expected True or False"):
        attend_with("q", good_inputs()["q"], causal=causal)


@pytest.mark.parametrize("policy", ["nope", "Zero", None, 0, "ignore"])
def test_invalid_fully_masked_policy(policy):
    with pytest.raises(ValueError, match=rf"^fully_masked={policy!r}; expected one of"):
        attend_with("q", good_inputs()["q"], fully_masked=policy)


def test_invalid_fully_masked_is_reported_before_the_inputs():
    # Even with valid arrays and no mask at all, a bad policy is an error, not ignored.
    with pytest.raises(ValueError, match=r"^fully_masked='Raise'"):
        scaled_dot_product_attention(np.ones((1, 1)), np.ones((1, 1)), np.ones((1, 1)),
                                     fully_masked="Raise")


# --------------------------------------------------------------------------------------
# softmax
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("axis", [2, -3, 10])
def test_softmax_axis_out_of_range(axis):
    with pytest.raises(ValueError, match=rf"^axis={axis} is out of range for an array with 2 "):
        softmax(np.ones((2, 3)), axis=axis)


@pytest.mark.parametrize("axis", [1.0, "0", None, True, (0, 1)])
def test_softmax_axis_not_an_integer(axis):
    with pytest.raises(TypeError, match="^" + re.escape(f"axis={axis!r}; expected an integer")):
        softmax(np.ones((2, 3)), axis=axis)


@pytest.mark.parametrize(
    ("x", "exc", "pattern"),
    [
        (None, TypeError, r"^x is None"),
        (3.0, ValueError, r"^x has 0 dimension\(s\)"),
        (np.array([1.0, np.nan]), ValueError, r"^x contains 1 NaN or infinite value\(s\)"),
        (np.array([1.0, np.inf]), ValueError, r"^x contains 1 NaN or infinite value\(s\)"),
        (np.array([1.0 + 2.0j]), TypeError, r"^x has complex dtype"),
        (np.array([True, False]), TypeError, r"^x has dtype bool"),
        (np.array(["a", "b"]), TypeError, r"^x has dtype <U1"),
        (np.zeros((2, 0)), ValueError, r"^x has an empty axis"),
    ],
)
def test_softmax_bad_x(x, exc, pattern):
    with pytest.raises(exc, match=pattern):
        softmax(x)


@pytest.mark.parametrize("mask", [np.ones(3), np.ones(3, dtype=int), [1, 0, 1]])
def test_softmax_mask_of_the_wrong_dtype(mask):
    with pytest.raises(TypeError, match=r"^mask has dtype"):
        softmax(np.ones((2, 3)), mask=mask)


def test_softmax_mask_that_does_not_broadcast():
    with pytest.raises(ValueError, match=r"^mask \(shape \(2,\), dtype bool\) does not broadcast "
                                         r"to x \(shape \(2, 3\)"):
        softmax(np.ones((2, 3)), mask=np.array([True, False]))


@pytest.mark.parametrize("policy", ["nope", None])
def test_softmax_invalid_fully_masked_policy(policy):
    with pytest.raises(ValueError, match=rf"^fully_masked={policy!r}; expected one of"):
        softmax(np.ones(3), fully_masked=policy)


def test_softmax_fully_masked_raise():
    with pytest.raises(ValueError, match=r"1 slice\(s\) along axis 0 .*nothing to attend to"):
        softmax(np.ones(3), mask=np.zeros(3, dtype=bool))


# --------------------------------------------------------------------------------------
# project_qkv
# --------------------------------------------------------------------------------------


def good_projection():
    rng = np.random.default_rng(1)
    return {
        "x": rng.normal(size=(4, 6)),
        "w_q": rng.normal(size=(6, 3)),
        "w_k": rng.normal(size=(6, 3)),
        "w_v": rng.normal(size=(6, 2)),
    }


def project_with(name, value):
    args = good_projection()
    args[name] = value
    return project_qkv(args["x"], args["w_q"], args["w_k"], args["w_v"])


def test_good_projection_is_good():
    q, k, v = project_with("x", good_projection()["x"])
    assert (q.shape, k.shape, v.shape) == ((4, 3), (4, 3), (4, 2))


@pytest.mark.parametrize("name", ["w_q", "w_k", "w_v"])
def test_projection_with_the_wrong_number_of_rows(name):
    value = np.ones((5, 3))
    with pytest.raises(ValueError, match=rf"^{name} has 5 rows .* but x has d_model=6 columns"):
        project_with(name, value)


@pytest.mark.parametrize("name", ["w_q", "w_k", "w_v"])
def test_projection_that_is_not_a_matrix(name):
    with pytest.raises(ValueError, match=rf"^{name} has 1 dimension\(s\)"):
        project_with(name, np.ones(6))
    with pytest.raises(ValueError, match=rf"^{name} has shape \(2, 6, 3\).*expected a 2-D"):
        project_with(name, np.ones((2, 6, 3)))


def test_projection_w_q_and_w_k_of_different_widths():
    with pytest.raises(ValueError, match=r"^w_q has d_k=3 columns but w_k has 4"):
        project_with("w_k", np.ones((6, 4)))


def test_projection_x_of_one_dimension():
    with pytest.raises(ValueError, match=r"^x has 1 dimension\(s\)"):
        project_with("x", np.ones(6))


@pytest.mark.parametrize("name", ["x", "w_q", "w_k", "w_v"])
def test_projection_nan_and_none(name):
    value = good_projection()[name].copy()
    value[0, 0] = np.nan
    with pytest.raises(ValueError, match=rf"^{name} contains 1 NaN"):
        project_with(name, value)
    with pytest.raises(TypeError, match=rf"^{name} is None"):
        project_with(name, None)


# --------------------------------------------------------------------------------------
# arrays from another library whose conversion fails
# --------------------------------------------------------------------------------------


def test_torch_tensors_that_numpy_cannot_read_get_a_type_error_naming_the_argument():
    torch = pytest.importorskip("torch", reason="torch is optional (not in requirements.txt)")
    good = np.ones((2, 3))
    needs_grad = torch.ones((2, 3), requires_grad=True)
    with pytest.raises(TypeError, match=r"^q of type Tensor could not be turned into a numpy "
                                        r"array \(RuntimeError"):
        scaled_dot_product_attention(needs_grad, good, good)
    bf16 = torch.ones((2, 3), dtype=torch.bfloat16)
    with pytest.raises(TypeError, match=r"^k of type Tensor could not be turned into a numpy"):
        scaled_dot_product_attention(good, bf16, good)


def test_shared_checks_refuse_what_they_should():
    from attention_lib._validation import index, real_number, token_position

    assert real_number(np.float32(0.25), "lr") == 0.25
    for bad in (True, 1 + 0j, "1", np.array([1.0]), None):
        with pytest.raises(TypeError, match="lr="):
            real_number(bad, "lr")
    for bad in (float("nan"), float("inf")):
        with pytest.raises(ValueError, match="finite"):
            real_number(bad, "lr")
    with pytest.raises(ValueError, match="> 0"):
        real_number(0.0, "lr", minimum=0.0, strict_minimum=True)
    with pytest.raises(ValueError, match="<= 1"):
        real_number(2, "p", maximum=1)
    assert index(np.int32(0), 1, "key") == 0
    for bad, error in ((-1, ValueError), (3, ValueError), (True, TypeError), (1.0, TypeError)):
        with pytest.raises(error, match="key="):
            index(bad, 3, "key")
    tokens = ["The", "cat", "sat", "cat"]
    assert token_position(tokens, "cat") == 1 and token_position(tokens, 3) == 3
    for bad in (-1, 4, "dog", True):
        with pytest.raises(ValueError, match="query="):
            token_position(tokens, bad)
